package mrtr.resume_test

import data.mrtr.resume

demo := data.mrtr.datasets.demo

strict := data.mrtr.datasets.strict

resume_input(target, rounds, ttl) := {"principal": "alice", "method": "tools/call", "target": target, "ttl_seconds": ttl, "max_rounds": rounds}

test_demo_round_limits if {
	resume.decision == {"allow": true, "deny": [], "max_rounds": 3, "ttl_seconds": 240, "rules": ["tools.book_demo_call"]} with input as resume_input("book_demo_call", 3, 300) with data.mrtr.config as demo
	d := resume.decision with input as resume_input("connect_calendar", 3, 300) with data.mrtr.config as demo
	d.max_rounds == 2
	d.ttl_seconds == 300
	e := resume.decision with input as resume_input("unknown_tool", 3, 300) with data.mrtr.config as demo
	e.max_rounds == 2
	e.rules == ["default"]
}

test_strict_round_limits if {
	d := resume.decision with input as resume_input("connect_calendar", 3, 300) with data.mrtr.config as strict
	d.allow
	d.max_rounds == 1
	d.ttl_seconds == 60
}

test_out_of_bounds_refuses if {
	c := object.union(object.remove(demo, ["default"]), {"default": object.remove(demo.default, ["max_rounds"])})
	d := resume.decision with input as resume_input("unknown_tool", 9, 300) with data.mrtr.config as c
	not d.allow
	[x.code | some x in d.deny] == ["policy.rounds_out_of_bounds"]
	d.deny[0].rule == "input.max_rounds"
	d.deny[0].message == "\"unknown_tool\" would have a limit of 9 rounds; this deployment allows 1 to 5"
}

test_no_data_refuses if {
	d := resume.decision with input as resume_input("book_demo_call", 3, 300) with data.mrtr.config as {}
	not d.allow
	[x.code | some x in d.deny] == ["policy.config_missing"]
}

test_input_without_method_or_target_refuses if {
	e := resume.decision with input as {} with data.mrtr.config as demo
	not e.allow
	[x.code | some x in e.deny] == ["policy.input_malformed"]
	t := resume.decision with input as object.remove(resume_input("book_demo_call", 3, 300), ["method"]) with data.mrtr.config as demo
	not t.allow
	[x.code | some x in t.deny] == ["policy.input_malformed"]
	resume.decision.allow with input as object.union(resume_input("notes://today", 3, 300), {"method": "resources/read"}) with data.mrtr.config as demo
}
