# METADATA
# title: What a tool may ask (entrypoint mrtr/ask/decision)
# description: |
#   Consulted before every ask with what is about to be asked. Denials
#   explain; allow also needs every check to pass positively, so a rule
#   that is undefined refuses instead of allowing.
package mrtr.ask

import data.mrtr.classify
import data.mrtr.tools

decision := {
	"allow": allow,
	"deny": sort(deny),
	"max_rounds": tools.max_rounds,
	"ttl_seconds": tools.ttl_seconds,
	"rules": tools.rule_names,
}

default allow := false

allow if {
	count(deny) == 0
	permitted
}

default deny := set()

deny := violations if count(violations) > 0

deny := {tools.undecided} if {
	count(violations) == 0
	not permitted
}

# --- what is asked -----------------------------------------------------------

inputs := i if {
	i := input.inputs
	is_object(i)
} else := {}

inputs_ok if not input.inputs

inputs_ok if is_object(input.inputs)

kind(req) := "form" if {
	req.method == "elicitation/create"
	object.get(req, ["params", "mode"], "form") == "form"
} else := "url" if {
	req.method == "elicitation/create"
	req.params.mode == "url"
} else := "sampling" if {
	req.method == "sampling/createMessage"
} else := "roots" if {
	req.method == "roots/list"
} else := "unknown"

# fields holds every form field with its classes, the core's verdict
# (req.fields, built by the guard core) included.
fields contains {"key": key, "name": name, "classes": classify.field_classes(name, prop, object.get(req, ["fields", name], {}))} if {
	some key, req in inputs
	kind(req) == "form"
	some name, prop in req.params.requestedSchema.properties
}

# A form field without the core's verdict cannot be judged: the input was
# not built by the guard core (policy.input), so nothing is allowed.
unjudged contains {"key": key, "name": name} if {
	some key, req in inputs
	kind(req) == "form"
	some name, _ in req.params.requestedSchema.properties
	not is_object(object.get(req, ["fields", name], null))
}

form_field_count := sum([count(p) |
	some _, req in inputs
	kind(req) == "form"
	p := req.params.requestedSchema.properties
	is_object(p)
])

forbidden := {c | some c in object.get(tools.config, "forbidden_classes", [])}

forbidden_hit(f) if {
	some c in f.classes
	c in forbidden
}

# urls holds the host and path of every URL-mode request.
urls contains object.union({"key": key}, url_parts(req.params.url)) if {
	some key, req in inputs
	kind(req) == "url"
}

url_parts(s) := {"host": trim(lower(host), "[]"), "path": normal_path(path)} if {
	is_string(s)
	[[_, _, host, path]] := regex.find_all_string_submatch_n(`^([A-Za-z][A-Za-z0-9+.-]*)://(?:[^/?#@]*@)?(\[[^\]]*\]|[^/?#:@]*)(?::[0-9]*)?([^?#]*)`, s, 1)
}

normal_path("") := "/"

normal_path(p) := p if p != ""

# Dot segments, encoded dots or slashes and backslashes could leave an
# allowed prefix once the browser resolves them.
path_suspicious(p) if regex.match(`(^|/)\.\.?(/|$)|%2[eEfF]|%5[cC]|\\`, p)

# --- positive checks -----------------------------------------------------------

permitted if {
	tools.input_ok
	inputs_ok
	tools.bounds_ok
	every _, req in inputs {
		request_ok(req)
	}
	count(fields) == form_field_count
	every f in fields {
		field_ok(f)
	}
	every u in urls {
		url_ok(u)
	}
}

request_ok(req) if {
	k := kind(req)
	tools.kind_allowed(k)
	kind_ok(k, req)
}

kind_ok("form", req) if is_object(req.params.requestedSchema.properties)

kind_ok("url", req) if url_parts(req.params.url)

kind_ok("sampling", _)

kind_ok("roots", _)

field_ok(f) if {
	not forbidden_hit(f)
	every m in tools.matched {
		tools.field_allowed(m, f.name, f.classes)
	}
}

url_ok(u) if {
	tools.url_host_allowed(u.host)
	tools.url_path_allowed(u.path)
	not path_suspicious(u.path)
}

# --- denials -----------------------------------------------------------------

violations contains v if some v in tools.violations

violations contains tools.input_denial if not tools.input_ok

violations contains tools.denial("policy.input_malformed", "", "", "", "inputs must be an object of input requests by key") if {
	not inputs_ok
}

violations contains tools.denial(
	"policy.input_malformed", "", f.key, f.name,
	sprintf("field %s of %s has no classification from the guard core (build the input with the core's policy.input)", [tools.quote(f.name), tools.quote(f.key)]),
) if {
	some f in unjudged
}

violations contains tools.denial(
	"policy.kind_not_allowed", m.name, key, "",
	sprintf("%s may not ask for %s by %s (allowed: %s)", [tools.quote(tools.target), tools.quote(key), kind_label(req), tools.allowed_kinds]),
) if {
	some key, req in inputs
	k := kind(req)
	some m in tools.matched
	not k in object.get(m.rule, "kinds", [])
}

kind_label(req) := "a form" if {
	kind(req) == "form"
} else := "a URL" if {
	kind(req) == "url"
} else := "sampling" if {
	kind(req) == "sampling"
} else := "roots/list" if {
	kind(req) == "roots"
} else := concat("", ["an unknown method ", req.method]) if {
	is_string(req.method)
} else := "an unknown method"

violations contains tools.denial(
	"policy.class_forbidden", "forbidden_classes", f.key, f.name,
	sprintf("field %s of %s is %s, a class this deployment forbids", [tools.quote(f.name), tools.quote(f.key), c]),
) if {
	some f in fields
	some c in f.classes
	c in forbidden
}

violations contains tools.denial(
	"policy.field_not_allowed", m.name, f.key, f.name,
	sprintf("%s may not ask for field %s (%s): %s allows neither the name nor the class", [tools.quote(tools.target), tools.quote(f.name), concat(", ", sort(f.classes)), m.name]),
) if {
	tools.kind_allowed("form") # else kind_not_allowed says enough
	some f in fields
	not forbidden_hit(f)
	some m in tools.matched
	not tools.field_allowed(m, f.name, f.classes)
}

# class_scopes: a field of that class only for a caller whose access token
# carries the scope (OAuth; under --auth-tokens input.scopes is empty).
violations contains tools.denial(
	"policy.scope_missing", m.name, f.key, f.name,
	sprintf("%s may ask for field %s (%s) only with the scope %s", [tools.quote(tools.target), tools.quote(f.name), c, tools.quote(s)]),
) if {
	some f in fields
	some m in tools.matched
	some c in f.classes
	some s in object.get(m.rule, ["class_scopes", c], [])
	not s in caller_scopes
}

caller_scopes := {s | some s in input.scopes}

violations contains tools.denial("policy.url_invalid", "", key, "", sprintf("the URL of %s cannot be read", [tools.quote(key)])) if {
	some key, req in inputs
	kind(req) == "url"
	not url_parts(req.params.url)
}

violations contains tools.denial(
	"policy.url_host_not_allowed", m.name, u.key, "",
	sprintf("%s sends users to host %s, which %s does not allow", [tools.quote(u.key), tools.quote(u.host), m.name]),
) if {
	some u in urls
	some m in tools.matched
	not tools.host_ok(m.rule, u.host)
}

violations contains tools.denial(
	"policy.url_path_not_allowed", m.name, u.key, "",
	sprintf("%s sends users to path %s, which %s does not allow", [tools.quote(u.key), tools.quote(u.path), m.name]),
) if {
	some u in urls
	some m in tools.matched
	not tools.path_ok(m.rule, u.path)
}

violations contains tools.denial(
	"policy.url_path_not_allowed", concat(", ", tools.rule_names), u.key, "",
	sprintf("%s has a path with dot segments or encoded separators: %s", [tools.quote(u.key), tools.quote(u.path)]),
) if {
	some u in urls
	path_suspicious(u.path)
}
