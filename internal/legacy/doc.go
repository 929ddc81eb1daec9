// Package legacy serves clients of the 2025-11-25 and 2025-06-18
// revisions, which open with initialize, keep a session, know no
// input_required result and take elicitation, sampling and roots as
// server-to-client requests on their session.
//
// serve and proxy share it: a tool's input rounds are fulfilled on the
// session (Run), each answer set goes back to the tool as the retry of a
// 2026-07-28 call would, through the same guard, ledger and round limit;
// Router sends a request to the session handler or to the stateless one;
// Capabilities states, in 2026-07-28 form, what the client declared at
// initialize.
package legacy
