package mrtr.scopes_test

import data.mrtr.ask

oauth := data.mrtr.datasets.oauth

# form is a form request as the guard core's policy.input writes it, with
# the core's (cleared) verdict on every field.
form(props) := {"c": {
	"method": "elicitation/create",
	"fields": {name: {"class": "", "language": "", "reason": ""} | some name, _ in props},
	"params": {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": props}},
}}

phone_form := form({"name": {"type": "string"}, "phone": {"type": "string", "title": "Phone number"}})

name_form := form({"name": {"type": "string"}})

caller(scopes, inputs) := {
	"principal": "https://as.example#alice", "scopes": scopes, "claims": {"client_id": "crm-app"},
	"method": "tools/call", "target": "update_contact", "ttl_seconds": 300, "max_rounds": 2, "inputs": inputs,
}

test_phone_with_crm_write if {
	d := ask.decision with input as caller(["mcp", "crm:write"], phone_form) with data.mrtr.config as oauth
	d.allow
}

test_phone_without_crm_write_refused if {
	d := ask.decision with input as caller(["mcp", "crm:read"], phone_form) with data.mrtr.config as oauth
	not d.allow
	d.deny == [{
		"code": "policy.scope_missing",
		"rule": "tools.update_contact",
		"key": "c",
		"field": "phone",
		"message": "\"update_contact\" may ask for field \"phone\" (contact.phone) only with the scope \"crm:write\"",
	}]
}

# Under --auth-tokens there are no scopes: refused as well.
test_phone_without_scopes_refused if {
	inp := object.remove(caller([], phone_form), ["scopes", "claims"])
	d := ask.decision with input as inp with data.mrtr.config as oauth
	not d.allow
}

test_name_needs_no_scope if {
	d := ask.decision with input as caller([], name_form) with data.mrtr.config as oauth
	d.allow
}
