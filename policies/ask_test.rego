package mrtr.ask_test

import data.mrtr.ask

demo := data.mrtr.datasets.demo

strict := data.mrtr.datasets.strict

# form is a form request as the guard core's policy.input writes it: with
# the core's verdict on every field ("fields"); secret names the fields the
# core calls secrets, with their verdicts.
form(props) := form_with(props, {})

form_with(props, secret) := {
	"method": "elicitation/create",
	"fields": {name: object.get(secret, name, cleared) | some name, _ in props},
	"params": {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": props}},
}

cleared := {"class": "", "language": "", "reason": ""}

password := {"class": "password", "language": "en", "reason": "name \"password\" means password"}

url(u) := {"method": "elicitation/create", "params": {"mode": "url", "message": "Open this page", "url": u}}

ask_input(target, inputs) := {"principal": "alice", "method": "tools/call", "target": target, "ttl_seconds": 300, "max_rounds": 3, "inputs": inputs}

contact := form({"name": {"type": "string", "title": "Your name"}, "email": {"type": "string", "format": "email", "title": "Work email"}})

slot := form({
	"slot": {"type": "string", "title": "Time slot", "oneOf": [{"const": "2026-09-01T10:00:00Z", "title": "Tue 10:00"}]},
	"confirm": {"type": "boolean", "title": "Book this slot?"},
})

codes(d) := {[x.code, x.key, x.field] | some x in d.deny}

test_demo_book_demo_call_both_rounds if {
	d1 := ask.decision with input as ask_input("book_demo_call", {"contact": contact}) with data.mrtr.config as demo
	d1 == {"allow": true, "deny": [], "max_rounds": 3, "ttl_seconds": 240, "rules": ["tools.book_demo_call"]}
	d2 := ask.decision with input as ask_input("book_demo_call", {"slot": slot}) with data.mrtr.config as demo
	d2.allow
}

test_demo_refuses_other_fields_and_forbidden_classes if {
	inp := ask_input("book_demo_call", {"c": form({"phone": {"type": "string"}, "ssn": {"type": "string"}})})
	d := ask.decision with input as inp with data.mrtr.config as demo
	not d.allow
	codes(d) == {["policy.field_not_allowed", "c", "phone"], ["policy.class_forbidden", "c", "ssn"]}
	some x in d.deny
	x.code == "policy.class_forbidden"
	x.rule == "forbidden_classes"
	x.message == "field \"ssn\" of \"c\" is government_id, a class this deployment forbids"
}

test_deny_wins_over_a_field_allowed_by_name if {
	c := object.union(demo, {"tools": {"book_demo_call": {"fields": ["name", "email", "password"]}}})
	d := ask.decision with input as ask_input("book_demo_call", {"c": form_with({"password": {"type": "string"}}, {"password": password})}) with data.mrtr.config as c
	not d.allow
	codes(d) == {["policy.class_forbidden", "c", "password"]}
}

test_demo_list_bookings_asks_nothing if {
	d := ask.decision with input as ask_input("list_bookings", {"c": contact}) with data.mrtr.config as demo
	codes(d) == {["policy.kind_not_allowed", "c", ""]}

	# a state-only ask is fine
	e := ask.decision with input as ask_input("list_bookings", {}) with data.mrtr.config as demo
	e.allow
	e.max_rounds == 1
}

test_demo_connect_calendar_url_only if {
	ok := ask.decision with input as ask_input("connect_calendar", {"k": url("http://127.0.0.1:8080/connect/abc")}) with data.mrtr.config as demo
	ok.allow
	form_ask := ask.decision with input as ask_input("connect_calendar", {"k": form_with({"api_key": {"type": "string"}}, {"api_key": {"class": "api_key"}})}) with data.mrtr.config as demo
	codes(form_ask) == {["policy.kind_not_allowed", "k", ""], ["policy.class_forbidden", "k", "api_key"]}
	other := ask.decision with input as ask_input("connect_calendar", {"k": url("https://evil.example/connect/x")}) with data.mrtr.config as demo
	codes(other) == {["policy.url_host_not_allowed", "k", ""]}
	path := ask.decision with input as ask_input("connect_calendar", {"k": url("http://localhost:9/admin")}) with data.mrtr.config as demo
	codes(path) == {["policy.url_path_not_allowed", "k", ""]}
}

test_url_tricks if {
	dots := ask.decision with input as ask_input("connect_calendar", {"k": url("http://localhost/connect/../admin")}) with data.mrtr.config as demo
	codes(dots) == {["policy.url_path_not_allowed", "k", ""]}
	enc := ask.decision with input as ask_input("connect_calendar", {"k": url("http://localhost/connect/%2e%2e/admin")}) with data.mrtr.config as demo
	codes(enc) == {["policy.url_path_not_allowed", "k", ""]}
	userinfo := ask.decision with input as ask_input("connect_calendar", {"k": url("http://localhost@evil.example/connect/")}) with data.mrtr.config as demo
	codes(userinfo) == {["policy.url_host_not_allowed", "k", ""]}
	upper := ask.decision with input as ask_input("connect_calendar", {"k": url("http://LOCALHOST/connect/x")}) with data.mrtr.config as demo
	upper.allow
	junk := ask.decision with input as ask_input("connect_calendar", {"k": url("not a url")}) with data.mrtr.config as demo
	codes(junk) == {["policy.url_invalid", "k", ""]}
}

test_undescribed_tool_gets_the_default if {
	d := ask.decision with input as ask_input("new_tool", {"c": contact}) with data.mrtr.config as demo
	d.allow
	d.rules == ["default"]
	d.max_rounds == 2
	s := ask.decision with input as ask_input("new_tool", {"c": form({"notes": {"type": "string"}})}) with data.mrtr.config as demo
	codes(s) == {["policy.field_not_allowed", "c", "notes"]}
	t := ask.decision with input as ask_input("new_tool", {"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 10}}}) with data.mrtr.config as demo
	codes(t) == {["policy.kind_not_allowed", "s", ""]}
}

test_strict_deployment if {
	d := ask.decision with input as ask_input("book_demo_call", {"c": contact}) with data.mrtr.config as strict
	d.allow
	d.max_rounds == 2
	d.ttl_seconds == 120

	# names only: a new field is refused even in an allowed class
	e := ask.decision with input as ask_input("book_demo_call", {"c": form({"work_email": {"type": "string", "format": "email"}})}) with data.mrtr.config as strict
	codes(e) == {["policy.field_not_allowed", "c", "work_email"]}
	f := ask.decision with input as ask_input("anything", {"c": contact}) with data.mrtr.config as strict
	codes(f) == {["policy.kind_not_allowed", "c", ""]}
	g := ask.decision with input as ask_input("connect_calendar", {"k": url("http://localhost/connect/x")}) with data.mrtr.config as strict
	codes(g) == {["policy.url_host_not_allowed", "k", ""]}
}

test_strict_bounds_the_guard_settings if {
	# the guard's own 3 rounds and 300 s are outside strict's limits for a
	# rule that sets neither, so strict's default supplies them
	d := ask.decision with input as ask_input("list_bookings", {}) with data.mrtr.config as strict
	d.allow
	d.max_rounds == 1
	d.ttl_seconds == 60
}

test_undefined_never_allows if {
	# properties that are not an object: no field can be checked
	bad := {"c": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": ["name"]}}}}
	d := ask.decision with input as ask_input("book_demo_call", bad) with data.mrtr.config as demo
	not d.allow
	codes(d) == {["policy.undecided", "", ""]}

	# an unknown method
	u := ask.decision with input as ask_input("book_demo_call", {"x": {"method": "tools/call"}}) with data.mrtr.config as demo
	codes(u) == {["policy.kind_not_allowed", "x", ""]}

	# inputs that are not an object
	a := ask.decision with input as object.union(ask_input("book_demo_call", {}), {"inputs": [contact]}) with data.mrtr.config as demo
	codes(a) == {["policy.input_malformed", "", ""]}

	# no data at all
	n := ask.decision with input as ask_input("book_demo_call", {"c": contact}) with data.mrtr.config as {}
	not n.allow
	codes(n) == {["policy.config_missing", "", ""]}
}

test_messages_name_the_rule if {
	d := ask.decision with input as ask_input("book_demo_call", {"c": form({"phone": {"type": "string"}})}) with data.mrtr.config as demo
	d.deny == [{
		"code": "policy.field_not_allowed",
		"rule": "tools.book_demo_call",
		"key": "c",
		"field": "phone",
		"message": "\"book_demo_call\" may not ask for field \"phone\" (contact.phone): tools.book_demo_call allows neither the name nor the class",
	}]
}

test_the_secret_class_is_the_cores if {
	# the core clears these: the policy has no word table of its own to refuse them by
	cleared_by_core := form({
		"token_count": {"type": "integer"},
		"password_hint": {"type": "string"},
		"api_key_name": {"type": "string"},
		"has_api_key": {"type": "boolean"},
	})
	c := object.union(demo, {"tools": {"t": {"kinds": ["form"], "classes": ["number", "free_text", "contact.name", "choice"]}}})
	d := ask.decision with input as ask_input("t", {"c": cleared_by_core}) with data.mrtr.config as c
	d.allow

	# and whatever the name, a field the core calls a secret is one
	s := ask.decision with input as ask_input("t", {"c": form_with({"notes": {"type": "string"}}, {"notes": password})}) with data.mrtr.config as c
	codes(s) == {["policy.class_forbidden", "c", "notes"]}
}

test_a_form_without_the_cores_verdicts_is_refused if {
	bare := {"method": "elicitation/create", "params": {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}
	d := ask.decision with input as ask_input("book_demo_call", {"c": bare}) with data.mrtr.config as demo
	not d.allow
	codes(d) == {["policy.input_malformed", "c", "name"]}
}

# An input without the method and target the core always writes was not
# built by it: the default rule does not stand in for the tool's own.
test_input_without_method_or_target_refuses if {
	e := ask.decision with input as {} with data.mrtr.config as demo
	not e.allow
	codes(e) == {["policy.input_malformed", "", ""]}

	t := ask.decision with input as object.remove(ask_input("book_demo_call", {"contact": contact}), ["target"]) with data.mrtr.config as demo
	not t.allow
	codes(t) == {["policy.input_malformed", "", ""]}

	# a target that is not a string, and a method that never asks
	n := ask.decision with input as ask_input(7, {}) with data.mrtr.config as demo
	codes(n) == {["policy.input_malformed", "", ""]}
	m := ask.decision with input as object.union(ask_input("book_demo_call", {}), {"method": "completion/complete"}) with data.mrtr.config as demo
	codes(m) == {["policy.input_malformed", "", ""]}

	# the same input with both is allowed, and so is an empty target (lint's
	# bare inputs, judged by the default rule)
	ask.decision.allow with input as ask_input("book_demo_call", {"contact": contact}) with data.mrtr.config as demo
	ask.decision.rules == ["default"] with input as ask_input("", {}) with data.mrtr.config as demo
	ask.decision.allow with input as ask_input("", {}) with data.mrtr.config as demo
	ask.decision.allow with input as object.union(ask_input("book_demo_call", {}), {"method": "prompts/get"}) with data.mrtr.config as demo
}
