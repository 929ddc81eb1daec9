# METADATA
# title: Which calls wait for a person's yes (entrypoint mrtr/approve/decision)
# description: |
#   Consulted before a call runs, with its arguments (the only decision
#   that sees them). {"approval": "confirm", "summary": "…"} makes the
#   guard ask the caller a yes/no form that shows the summary; {} lets the
#   call run. The summary says what will happen: write it from the
#   arguments, never from secrets. Rules fail closed: an argument of the
#   wrong type needs approval rather than skipping it.
package mrtr.approve

default decision := {}

decision := {"approval": "confirm", "summary": concat(" ", sort(confirm))} if count(confirm) > 0

# A transfer above 1000 (or with an amount that is not a number) waits.
confirm contains sprintf("Transfer %v to %v.", [object.get(input.arguments, "amount", "?"), object.get(input.arguments, "to", "?")]) if {
	input.method == "tools/call"
	input.target == "transfer"
	not small_amount
}

small_amount if {
	a := input.arguments.amount
	is_number(a)
	a <= 1000
}

# Deleting a file outside the scratch folder waits.
scratch := "/scratch/"

confirm contains sprintf("Delete the file %v.", [object.get(input.arguments, "path", "?")]) if {
	input.method == "tools/call"
	input.target == "delete_file"
	not in_scratch
}

in_scratch if {
	p := input.arguments.path
	is_string(p)
	startswith(p, scratch)

	# dot segments, encoded dots or slashes, backslashes could leave it
	not regex.match(`(^|/)\.\.?(/|$)|%2[eEfF]|%5[cC]|\\`, p)
}

# The demo server's cancel_booking always asks.
confirm contains sprintf("Cancel the booking %v. This cannot be undone.", [object.get(input.arguments, "booking_id", "?")]) if {
	input.method == "tools/call"
	input.target == "cancel_booking"
}
