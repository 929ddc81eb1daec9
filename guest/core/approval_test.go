package core

import (
	"encoding/json"
	"strings"
	"testing"
)

const tRevA, tRevB = "rev-a", "rev-b"

func tApprovalAsk(label, args, rev string) string {
	return tcall{op: "ask", label: label, args: args, target: "transfer",
		rest: `,"approval":{"kind":"confirm","summary":"Transfer 5000 EUR to Bob.","policyVersion":` + tJSON(rev) + `}`}.env()
}

func tApprovalResume(label, args, rev, token, responses string) string {
	r := `,"requestState":` + tJSON(token)
	if responses != "" {
		r = `,"inputResponses":` + responses + r
	}
	if rev != "" {
		r += `,"approval":{"kind":"confirm","policyVersion":` + tJSON(rev) + `}`
	}
	return tcall{op: "resume", label: label, args: args, target: "transfer", rest: r}.env()
}

const tTransfer = `{"amount":5000,"to":"bob"}`

func tYes(v string) string {
	return `{"` + ApprovalKey + `":{"action":"accept","content":{"approve":` + v + `}}}`
}

func TestApprovalConfirm(t *testing.T) {
	g := newConfigured(t, "")
	r := mustOK(t, g, tApprovalAsk("ap", tTransfer, tRevA), "input_required")
	reqs := r["result"].(map[string]any)["inputRequests"].(map[string]any)
	form, _ := json.Marshal(reqs[ApprovalKey])
	if len(reqs) != 1 || !strings.Contains(string(form), `"message":"Transfer 5000 EUR to Bob."`) || !strings.Contains(string(form), `"required":["approve"]`) || !strings.Contains(string(form), `"type":"boolean"`) {
		t.Fatalf("the confirm form: %s", form)
	}
	tok := tokenOf(t, r)

	// Yes approves; the answer is in the digest like any other.
	c := mustOK(t, g, tApprovalResume("ap1", tTransfer, tRevA, tok, tYes("true")), "complete")
	if c["answersDigest"] == "" {
		t.Fatal("no digest")
	}
	// No and decline are rejections; cancel is cancel.
	d := mustOK(t, g, tApprovalResume("ap2", tTransfer, tRevA, tok, tYes("false")), "declined")
	if strs(d["declined"])[0] != ApprovalKey {
		t.Fatalf("declined %v", d["declined"])
	}
	mustOK(t, g, tApprovalResume("ap3", tTransfer, tRevA, tok, `{"`+ApprovalKey+`":{"action":"decline"}}`), "declined")
	mustOK(t, g, tApprovalResume("ap4", tTransfer, tRevA, tok, `{"`+ApprovalKey+`":{"action":"cancel"}}`), "cancelled")
	// An accept without the answer is asked again, still as an approval.
	re := tokenOf(t, mustOK(t, g, tApprovalResume("ap5", tTransfer, tRevA, tok, `{"`+ApprovalKey+`":{"action":"accept","content":{}}}`), "input_required"))
	mustOK(t, g, tApprovalResume("ap6", tTransfer, tRevA, re, tYes("true")), "complete")
	mustReason(t, g, tApprovalResume("ap7", tTransfer, "", re, tYes("true")), ReasonPolicy)

	// Bound: other arguments, another policy version, or a resume that
	// expects no approval all get the uniform invalid-state error.
	mustReason(t, g, tApprovalResume("ap8", `{"amount":5001,"to":"bob"}`, tRevA, tok, tYes("true")), ReasonArguments)
	mustReason(t, g, tApprovalResume("ap9", tTransfer, tRevB, tok, tYes("true")), ReasonPolicy)
	mustReason(t, g, tApprovalResume("ap10", tTransfer, "", tok, tYes("true")), ReasonPolicy)
	if e := mustFail(t, g, tApprovalResume("ap11", tTransfer, tRevB, tok, tYes("true")), CodeStateInvalid); e["message"] != StateInvalidMessage {
		t.Fatalf("message %v", e["message"])
	}

	// A state that is not an approval never passes as one.
	plain := tokenOf(t, mustOK(t, g, tcall{op: "ask", label: "pl", args: tTransfer, target: "transfer", rest: `,"inputRequests":{"c":` + tConfirmForm + `}`}.env(), "input_required"))
	mustReason(t, g, tApprovalResume("ap12", tTransfer, tRevA, plain, `{"c":{"action":"accept","content":{"ok":true}}}`), ReasonPolicy)
}

func TestApprovalRefusals(t *testing.T) {
	g := newConfigured(t, "")
	// The key is the guard's own: no application may ask under it.
	e := mustFail(t, g, tAsk("k", `{"`+ApprovalKey+`":`+tConfirmForm+`}`, ""), CodeInputKey)
	if !strings.Contains(e["message"].(string), "approval") {
		t.Fatalf("message %v", e["message"])
	}
	for _, bad := range []string{
		`"approval":[]`,
		`"approval":{"kind":"approver","summary":"x","policyVersion":"r"}`,
		`"approval":{"kind":"confirm","summary":"","policyVersion":"r"}`,
		`"approval":{"kind":"confirm","summary":"x"}`,
		`"approval":{"kind":"confirm","summary":"x","policyVersion":"r"},"inputRequests":{"c":` + tConfirmForm + `}`,
	} {
		mustFail(t, g, tcall{op: "ask", label: "b", rest: "," + bad}.env(), CodeRequestMalformed)
	}
	// A client without form elicitation cannot be asked.
	mustFail(t, g, tcall{op: "ask", label: "c", caps: `{}`, rest: `,"approval":{"kind":"confirm","summary":"x","policyVersion":"r"}`}.env(), CodeCapabilityMissing)
}

func TestPolicyInputApprove(t *testing.T) {
	g := New()
	r := mustOK(t, g, `{"v":1,"op":"policy.input","decision":"approve","principal":"alice","method":"tools/call","target":"transfer","arguments":{"to":"bob","amount":1.50e3},"scopes":["pay"]}`, "")
	in, _ := json.Marshal(r["input"])
	want := `{"arguments":{"amount":1500,"to":"bob"},"max_rounds":0,"method":"tools/call","principal":"alice","scopes":["pay"],"target":"transfer","ttl_seconds":0}`
	if string(in) != want {
		t.Fatalf("input\n got %s\nwant %s", in, want)
	}
	mustFail(t, g, `{"v":1,"op":"policy.input","decision":"approve","principal":"","method":"tools/call","target":"t","arguments":{"n":9007199254740993}}`, CodeArgumentsMalformed)
}
