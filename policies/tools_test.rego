package mrtr.tools_test

import data.mrtr.tools

cfg := {
	"version": 1,
	"limits": {"max_rounds": {"min": 1, "max": 4}, "ttl_seconds": {"min": 60, "max": 600}},
	"forbidden_classes": ["secret"],
	"default": {"kinds": ["form"], "classes": ["choice"], "max_rounds": 2, "ttl_seconds": 120},
	"tools": {
		"exact_tool": {"kinds": ["form", "url"], "url_hosts": ["*.example.com"], "url_paths": ["/a/"], "max_rounds": 3},
		"admin_*": {"kinds": ["form", "sampling"], "max_rounds": 4, "ttl_seconds": 300},
		"*_report": {"kinds": ["form"], "max_rounds": 1},
		"admin_exact": {"kinds": ["roots"]},
	},
}

# cfg with a default rule that sets no limits of its own
bare_default := object.union(object.remove(cfg, ["default"]), {"default": {"kinds": ["form"]}})

test_exact_name_applies_alone if {
	m := tools.matched with input as {"target": "admin_exact"} with data.mrtr.config as cfg
	m == [{"name": "tools.admin_exact", "rule": cfg.tools.admin_exact}]
}

test_globs_apply_together if {
	names := tools.rule_names with input as {"target": "admin_report"} with data.mrtr.config as cfg
	names == ["tools.*_report", "tools.admin_*"]

	# the strictest rule wins
	tools.max_rounds == 1 with input as {"target": "admin_report"} with data.mrtr.config as cfg
	tools.kind_allowed("form") with input as {"target": "admin_report"} with data.mrtr.config as cfg
	not tools.kind_allowed("sampling") with input as {"target": "admin_report"} with data.mrtr.config as cfg
	tools.kind_allowed("sampling") with input as {"target": "admin_users"} with data.mrtr.config as cfg
}

test_undescribed_tools_get_the_default if {
	tools.rule_names == ["default"] with input as {"target": "anything"} with data.mrtr.config as cfg
	tools.kind_allowed("form") with input as {"target": "anything"} with data.mrtr.config as cfg
	not tools.kind_allowed("url") with input as {"target": "anything"} with data.mrtr.config as cfg
	tools.rule_names == ["default"] with input as {} with data.mrtr.config as cfg
}

test_no_data_refuses_everything if {
	not tools.resolved with input as {"target": "exact_tool"} with data.mrtr.config as {}
	not tools.kind_allowed("form") with input as {"target": "exact_tool"} with data.mrtr.config as {}
	v := tools.violations with input as {"target": "exact_tool"} with data.mrtr.config as {}
	{d.code | some d in v} == {"policy.config_missing"}
}

test_rounds_and_ttl_come_from_the_strictest_rule if {
	tools.max_rounds == 3 with input as {"target": "exact_tool", "max_rounds": 9} with data.mrtr.config as cfg

	# exact_tool sets no TTL: the default rule's
	tools.ttl_seconds == 120 with input as {"target": "exact_tool"} with data.mrtr.config as cfg
	tools.ttl_seconds == 300 with input as {"target": "admin_x"} with data.mrtr.config as cfg
}

test_guard_settings_apply_when_no_rule_sets_them if {
	c := bare_default
	tools.max_rounds == 3 with input as {"target": "nothing", "max_rounds": 3, "ttl_seconds": 90} with data.mrtr.config as c
	tools.ttl_seconds == 90 with input as {"target": "nothing", "max_rounds": 3, "ttl_seconds": 90} with data.mrtr.config as c
}

test_limits_bound_the_guard_settings if {
	c := bare_default
	v := tools.violations with input as {"target": "nothing", "max_rounds": 9, "ttl_seconds": 3600} with data.mrtr.config as c
	{[d.code, d.rule] | some d in v} == {["policy.rounds_out_of_bounds", "input.max_rounds"], ["policy.ttl_out_of_bounds", "input.ttl_seconds"]}
	not tools.bounds_ok with input as {"target": "nothing", "max_rounds": 9, "ttl_seconds": 3600} with data.mrtr.config as c
}

test_missing_limits_refuse if {
	c := bare_default
	v := tools.violations with input as {"target": "nothing"} with data.mrtr.config as c
	{d.code | some d in v} == {"policy.rounds_out_of_bounds", "policy.ttl_out_of_bounds"}
}

test_fields_by_name_glob_or_class if {
	m := {"name": "r", "rule": {"fields": ["email", "addr_*"], "classes": ["choice", "date"]}}
	tools.field_allowed(m, "email", {"contact.email"})
	tools.field_allowed(m, "addr_city", {"address"})
	tools.field_allowed(m, "slot", {"date", "choice"})
	not tools.field_allowed(m, "phone", {"contact.phone"})
	not tools.field_allowed(m, "slot", {"date", "free_text"})
	not tools.field_allowed(m, "x", set())
}

test_url_hosts_and_paths if {
	tools.url_host_allowed("cal.example.com") with input as {"target": "exact_tool"} with data.mrtr.config as cfg
	not tools.url_host_allowed("example.com") with input as {"target": "exact_tool"} with data.mrtr.config as cfg
	not tools.url_host_allowed("a.b.example.com") with input as {"target": "exact_tool"} with data.mrtr.config as cfg
	tools.url_path_allowed("/a/b") with input as {"target": "exact_tool"} with data.mrtr.config as cfg
	not tools.url_path_allowed("/b") with input as {"target": "exact_tool"} with data.mrtr.config as cfg
	tools.path_ok({}, "/anything")
	not tools.path_ok({"url_paths": []}, "/anything")
}
