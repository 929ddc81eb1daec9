# METADATA
# title: What a retry may do (entrypoint mrtr/resume/decision)
# description: |
#   Consulted before every resume: the round limit and state TTL of the
#   tool, within the bounds of limits. The guard core enforces the limit
#   when it opens the state.
package mrtr.resume

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

permitted if {
	tools.input_ok
	tools.bounds_ok
}

violations contains v if some v in tools.violations

violations contains tools.input_denial if not tools.input_ok

default deny := set()

deny := violations if count(violations) > 0

deny := {tools.undecided} if {
	count(violations) == 0
	not permitted
}
