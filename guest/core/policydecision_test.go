package core

import (
	"encoding/json"
	"testing"
)

// TestPolicyDecisionDocument: how a decision document reads, the one rule
// behind every host's policy package (deny wins, an allow needs limits,
// anything malformed refuses).
func TestPolicyDecisionDocument(t *testing.T) {
	g := New()
	for _, c := range []struct {
		name, doc string
		allow     bool
		firstCode string
		rounds    int64
	}{
		{"allowed", `{"allow":true,"deny":[],"max_rounds":3,"ttl_seconds":60,"rules":["tools.x"]}`, true, "", 3},
		{"integral floats are whole numbers", `{"allow":true,"max_rounds":3.0,"ttl_seconds":6e1}`, true, "", 3},
		{"no decision", ``, false, codeUndecided, 0},
		{"null", `null`, false, codeUndecided, 0},
		{"a list", `[{"allow":true}]`, false, codeUndecided, 0},
		{"allow is not a boolean", `{"allow":"true","max_rounds":3,"ttl_seconds":60}`, false, codeUndecided, 3},
		{"no limits", `{"allow":true}`, false, codeUndecided, 0},
		{"a limit of 0", `{"allow":true,"max_rounds":0,"ttl_seconds":60}`, false, codeUndecided, 0},
		{"a fractional limit", `{"allow":true,"max_rounds":2.5,"ttl_seconds":60}`, false, codeUndecided, 0},
		{"a limit above 2^31", `{"allow":true,"max_rounds":3,"ttl_seconds":2147483649}`, false, codeUndecided, 3},
		{"deny wins", `{"allow":true,"deny":[{"code":"policy.x","rule":"tools.t","key":"k","field":"f","message":"m"}],"max_rounds":3,"ttl_seconds":60}`, false, "policy.x", 3},
		{"deny is not a list", `{"allow":true,"deny":"policy.x","max_rounds":3,"ttl_seconds":60}`, false, codeUndecided, 0},
		{"a denial that is not an object", `{"allow":true,"deny":[7],"max_rounds":3,"ttl_seconds":60}`, false, codeUndecided, 3},
		{"a denial without a code", `{"allow":false,"deny":[{"message":"no"}],"max_rounds":3,"ttl_seconds":60}`, false, codeUndecided, 3},
	} {
		env := `{"v":1,"op":"policy.decision"}`
		if c.doc != "" {
			env = `{"v":1,"op":"policy.decision","document":` + c.doc + `}`
		}
		r := mustOK(t, g, env, "")
		d := r["decision"].(map[string]any)
		deny := d["deny"].([]any)
		if d["allow"] != c.allow || (c.allow != (len(deny) == 0)) {
			t.Errorf("%s: %v", c.name, d)
			continue
		}
		if !c.allow && deny[0].(map[string]any)["code"] != c.firstCode {
			t.Errorf("%s: first denial %v, want code %q", c.name, deny[0], c.firstCode)
		}
		if d["max_rounds"] != json.Number(itoa(int(c.rounds))) {
			t.Errorf("%s: max_rounds %v, want %d", c.name, d["max_rounds"], c.rounds)
		}
		if _, ok := d["rules"].([]any); !ok {
			t.Errorf("%s: rules must be a list: %v", c.name, d)
		}
	}
}

// TestPolicyRefusal: a round the host's policy refuses fails before
// anything else, with the refusal every host used to build itself.
func TestPolicyRefusal(t *testing.T) {
	g := newConfigured(t, "")
	reqs := `{"contact":` + tContactForm + `}`
	for _, c := range []struct {
		name, policy  string
		message, data string
	}{
		{"a host decision's code and rule",
			`{"allow":false,"code":"policy.field_not_allowed","rule":"tools.book","message":"no phone","denials":[{"code":"policy.field_not_allowed","rule":"tools.book","key":"contact","field":"phone","message":"no phone"},{"code":"policy.b","rule":"","message":"b"}]}`,
			"no phone (policy.field_not_allowed, rule tools.book)",
			`{"policy":{"code":"policy.field_not_allowed","rule":"tools.book","message":"no phone"},"denials":[{"code":"policy.field_not_allowed","rule":"tools.book","key":"contact","field":"phone","message":"no phone"},{"code":"policy.b","rule":"","message":"b"}]}`},
		{"allowed with a denial", `{"allow":true,"denials":[{"code":"x.no","key":"k","message":"no"}]}`,
			"no (x.no)", `{"policy":{"code":"x.no","rule":"","key":"k","message":"no"},"denials":[{"code":"x.no","rule":"","key":"k","message":"no"}]}`},
		{"allowed with a code", `{"allow":true,"code":"x.c"}`,
			"the policy does not allow this request (x.c)", `{"policy":{"code":"x.c","rule":"","message":"the policy does not allow this request"},"denials":[{"code":"x.c","rule":"","message":"the policy does not allow this request"}]}`},
		{"allow false and no reason", `{}`,
			"the policy does not allow this request (policy.undecided)", `{"policy":{"code":"policy.undecided","rule":"","message":"the policy does not allow this request"},"denials":[{"code":"policy.undecided","rule":"","message":"the policy does not allow this request"}]}`},
		{"no decision", `null`, "the policy does not allow this request (policy.undecided)", ""},
		{"allow is a number", `{"allow":1,"maxRounds":2}`, "the policy does not allow this request (policy.undecided)", ""},
		{"a denial that is a string", `{"allow":true,"denials":["x"]}`, "the policy does not allow this request (policy.undecided)", ""},
		{"a document that denies", `{"document":{"allow":false,"deny":[{"code":"policy.x","rule":"tools.t","key":"contact","field":"email","message":"not email"}],"max_rounds":3,"ttl_seconds":60}}`,
			"not email (policy.x, rule tools.t)", `{"policy":{"code":"policy.x","rule":"tools.t","message":"not email"},"denials":[{"code":"policy.x","rule":"tools.t","key":"contact","field":"email","message":"not email"}]}`},
		{"a document without limits", `{"document":{"allow":true}}`,
			"the policy did not allow this request and gave no reason (policy.undecided)", ""},
		{"a document that is null: no decision", `{"document":null}`, "the policy gave no decision (policy.undecided)", ""},
		{"a document that is a list", `{"document":[]}`, "the policy decision is not an object (policy.undecided)", ""},
		// Found by FuzzCall: a refusal named no reason (message " ()").
		{"a document whose denial is not an object", `{"document":{"allow":true,"deny":["0"]}}`,
			"the policy gave a denial that is not an object (policy.undecided)",
			`{"policy":{"code":"policy.undecided","rule":"","message":"the policy gave a denial that is not an object"},"denials":[{"code":"policy.undecided","rule":"","message":"the policy gave a denial that is not an object"}]}`},
		{"a document whose denial has no code", `{"document":{"allow":false,"deny":[{"rule":"tools.t","message":"no"}],"max_rounds":3,"ttl_seconds":60}}`,
			"no (policy.undecided, rule tools.t)", ""},
		{"a host decision whose denial has no code", `{"allow":false,"denials":[{"key":"k"}]}`,
			"the policy gave a denial without a code (policy.undecided)", ""},
	} {
		// Refused before the form is read: even a broken form gets the
		// policy's answer.
		for _, ask := range []string{tAsk("p", reqs, `,"policy":`+c.policy), tAsk("p", `{"contact":7}`, `,"policy":`+c.policy)} {
			e := mustFail(t, g, ask, CodePolicyDenied)
			if e["message"] != c.message {
				t.Errorf("%s: message %q, want %q", c.name, e["message"], c.message)
			}
			if c.data != "" {
				if got, _ := json.Marshal(e["data"]); !jsonEqual(t, got, []byte(c.data)) {
					t.Errorf("%s: data %s, want %s", c.name, got, c.data)
				}
			}
		}
	}
	// On resume too, before the state is opened.
	tok := tokenOf(t, mustOK(t, g, tAsk("r", reqs, ""), "input_required"))
	mustFail(t, g, with(tResume("r1", tok, `{}`), `,"policy":{"allow":false,"code":"policy.revoked"}`), CodePolicyDenied)
	mustFail(t, g, with(tResume("r2", "v4.local.garbage", `{}`), `,"policy":{"allow":false}`), CodePolicyDenied)
	mustOK(t, g, with(tResume("r3", tok, `{}`), `,"policy":{"allow":true,"maxRounds":2}`), "input_required")
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		t.Fatalf("not JSON: %s / %s", a, b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
