package mrtr.approve_test

import data.mrtr.approve

call(target, args) := {"method": "tools/call", "target": target, "principal": "alice", "arguments": args}

test_small_transfer_runs if {
	approve.decision == {} with input as call("transfer", {"amount": 1000, "to": "bob"})
}

test_large_transfer_waits if {
	approve.decision == {"approval": "confirm", "summary": "Transfer 1000.5 to bob."} with input as call("transfer", {"amount": 1000.5, "to": "bob"})
}

test_transfer_fails_closed if {
	approve.decision.approval == "confirm" with input as call("transfer", {"amount": "5", "to": "bob"})
	approve.decision.approval == "confirm" with input as call("transfer", {"to": "bob"})
}

test_delete_in_scratch_runs if {
	approve.decision == {} with input as call("delete_file", {"path": "/scratch/a.txt"})
}

test_delete_elsewhere_waits if {
	approve.decision == {"approval": "confirm", "summary": "Delete the file /etc/passwd."} with input as call("delete_file", {"path": "/etc/passwd"})
	approve.decision.approval == "confirm" with input as call("delete_file", {"path": "/scratch/../etc/passwd"})
	approve.decision.approval == "confirm" with input as call("delete_file", {"path": "/scratch/%2e%2e/x"})
	approve.decision.approval == "confirm" with input as call("delete_file", {"path": 7})
	approve.decision.approval == "confirm" with input as call("delete_file", {})
}

test_other_tools_and_methods_run if {
	approve.decision == {} with input as call("book_demo_call", {"amount": 5000})
	approve.decision == {} with input as {"method": "prompts/get", "target": "transfer", "arguments": {"amount": 5000}}
}

test_cancel_booking_waits if {
	approve.decision.summary == "Cancel the booking b-1. This cannot be undone." with input as call("cancel_booking", {"booking_id": "b-1"})
}
