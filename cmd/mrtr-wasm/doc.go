// Command mrtr-wasm reviews and runs the mrtr-wasm guard: it lints the
// input requests tools may send, tests, evaluates and builds the
// deployment's policy, and makes keys.
//
//	mrtr-wasm lint [--format text|json|sarif] [--policy DIR] [--data FILE] FILE...
//	mrtr-wasm policy test [DIR]
//	mrtr-wasm policy eval --input FILE [--policy DIR] [--data FILE] [--decision ask|resume]
//	mrtr-wasm policy build [DIR] -o bundle.tar.gz
//	mrtr-wasm keygen
//
// Exit codes: 0 clean, 1 findings at error severity (or failing tests, or
// a denied decision), 2 usage or unusable input.
package main
