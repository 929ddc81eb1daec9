# METADATA
# title: Which rule of the data applies to a tool
# description: |
#   A rule named exactly like the target applies alone. Otherwise every
#   rule whose name is a glob matching the target applies, and a request
#   must satisfy all of them (the strictest wins). Otherwise the default
#   rule applies: a tool nobody described gets the default, never
#   "anything". Also the round limit and state TTL, within the bounds of
#   limits.
package mrtr.tools

config := data.mrtr.config

target := t if {
	t := input.target
	is_string(t)
} else := ""

is_glob(p) if regex.match(`[*?\[{]`, p)

globs contains p if {
	some p, _ in config.tools
	is_glob(p)
	glob.match(p, null, target)
}

# matched lists the rules that apply, each with the name reviewers see.
matched := [{"name": concat("", ["tools.", target]), "rule": r}] if {
	r := config.tools[target]
} else := [{"name": concat("", ["tools.", p]), "rule": config.tools[p]} | some p in sort(globs)] if {
	count(globs) > 0
} else := [{"name": "default", "rule": r}] if {
	r := config.default
}

default resolved := false

resolved if {
	config_ok
	count(matched) > 0
}

config_ok if {
	is_object(config.default)
	is_object(config.limits.max_rounds)
	is_object(config.limits.ttl_seconds)
}

default rule_names := []

rule_names := [m.name | some m in matched]

# kind_allowed(k): every rule that applies lists the input kind k.
kind_allowed(k) if {
	resolved
	every m in matched {
		k in object.get(m.rule, "kinds", [])
	}
}

kinds_list := sort({k |
	some k in object.get(matched[0].rule, "kinds", [])
	kind_allowed(k)
})

default allowed_kinds := "none"

allowed_kinds := concat(", ", kinds_list) if count(kinds_list) > 0

# field_allowed(m, name, classes): rule m allows the field by its name or
# allows every class of it.
field_allowed(m, name, _) if name in object.get(m.rule, "fields", [])

field_allowed(m, name, _) if {
	some p in object.get(m.rule, "fields", [])
	is_glob(p)
	glob.match(p, null, name)
}

field_allowed(m, _, classes) if {
	count(classes) > 0
	allowed := object.get(m.rule, "classes", [])
	every c in classes {
		c in allowed
	}
}

url_host_allowed(host) if {
	resolved
	every m in matched {
		host_ok(m.rule, host)
	}
}

host_ok(rule, host) if {
	some p in object.get(rule, "url_hosts", [])
	glob.match(p, ["."], host)
}

url_path_allowed(path) if {
	resolved
	every m in matched {
		path_ok(m.rule, path)
	}
}

path_ok(rule, _) if not rule.url_paths

path_ok(rule, path) if {
	some p in rule.url_paths
	startswith(path, p)
}

# rounds and ttl are [value, where it comes from]: the strictest rule that
# sets it, else the default rule, else the guard's own setting.
tool_rounds := {[r, m.name] | some m in matched; r := m.rule.max_rounds}

rounds := min(tool_rounds) if {
	count(tool_rounds) > 0
} else := [r, "default"] if {
	r := config.default.max_rounds
} else := [r, "input.max_rounds"] if {
	r := input.max_rounds
	is_number(r)
}

tool_ttl := {[t, m.name] | some m in matched; t := m.rule.ttl_seconds}

ttl := min(tool_ttl) if {
	count(tool_ttl) > 0
} else := [t, "default"] if {
	t := config.default.ttl_seconds
} else := [t, "input.ttl_seconds"] if {
	t := input.ttl_seconds
	is_number(t)
}

default max_rounds := 0

max_rounds := rounds[0]

default ttl_seconds := 0

ttl_seconds := ttl[0]

rounds_ok if {
	rounds[0] >= config.limits.max_rounds.min
	rounds[0] <= config.limits.max_rounds.max
}

ttl_ok if {
	ttl[0] >= config.limits.ttl_seconds.min
	ttl[0] <= config.limits.ttl_seconds.max
}

# bounds_ok: the rules resolved and the limits hold.
bounds_ok if {
	resolved
	rounds_ok
	ttl_ok
}

# input_ok: the input names what the guard core always names, the method
# of the request that asks and its target. An input without them was not
# built by the core (policy.input), and the default rule must not stand
# in for the target's own. An empty target is one: lint judges bare
# inputs, asked by no tool, by the default rule.
input_ok if {
	input.method in {"tools/call", "prompts/get", "resources/read"}
	is_string(input.target)
}

input_denial := denial(
	"policy.input_malformed", "", "", "",
	"the input must name its method (tools/call, prompts/get or resources/read) and its target: build it with the guard core (policy.input)",
)

# violations every decision shares.
violations contains denial("policy.config_missing", "default", "", "", "the policy has no usable data (default, limits.max_rounds and limits.ttl_seconds are required): refusing everything") if {
	not config_ok
}

violations contains denial(
	"policy.rounds_out_of_bounds", rounds[1], "", "",
	sprintf("%s would have a limit of %d rounds; this deployment allows %d to %d", [quote(target), rounds[0], config.limits.max_rounds.min, config.limits.max_rounds.max]),
) if {
	config_ok
	not rounds_ok
}

violations contains denial("policy.rounds_out_of_bounds", "limits.max_rounds", "", "", sprintf("no round limit is set for %s", [quote(target)])) if {
	config_ok
	not rounds
}

violations contains denial(
	"policy.ttl_out_of_bounds", ttl[1], "", "",
	sprintf("%s would keep its state for %d s; this deployment allows %d to %d s", [quote(target), ttl[0], config.limits.ttl_seconds.min, config.limits.ttl_seconds.max]),
) if {
	config_ok
	not ttl_ok
}

violations contains denial("policy.ttl_out_of_bounds", "limits.ttl_seconds", "", "", sprintf("no state TTL is set for %s", [quote(target)])) if {
	config_ok
	not ttl
}

denial(code, rule, key, field, message) := {"code": code, "rule": rule, "key": key, "field": field, "message": message}

# undecided is the denial given when no rule explains a refusal: an
# undefined rule never turns into an allow.
undecided := denial("policy.undecided", "", "", "", "the policy could not decide this request, so it is refused")

quote(s) := concat("", ["\"", s, "\""])
