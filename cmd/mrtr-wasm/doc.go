// Command mrtr-wasm runs and reviews the mrtr-wasm guard: it serves the
// demo MCP server with the guard in front of its tools, puts the guard in
// front of an MCP server it did not write (proxy), lints the input
// requests tools may send, tests, evaluates and builds the deployment's
// policy, makes keys, and checks audit logs.
//
//	mrtr-wasm serve [--addr HOST:PORT] [--keys FILE] [--oauth-issuer URL | --auth-tokens FILE] [--ledger URL] [--crm URL] [flags]
//	mrtr-wasm proxy [--addr HOST:PORT] [--keys FILE] --upstream URL | -- CMD ARGS [flags]
//	mrtr-wasm lint [--format text|json|sarif] [--policy DIR] [--data FILE] FILE...
//	mrtr-wasm policy test [DIR]
//	mrtr-wasm policy eval --input FILE [--policy DIR] [--data FILE] [--decision ask|resume]
//	mrtr-wasm policy build [DIR] -o bundle.tar.gz
//	mrtr-wasm keygen [-o FILE]
//	mrtr-wasm audit verify [--head HASH] FILE...
//
// "mrtr-wasm COMMAND -h" lists a command's flags. Exit codes: 0 clean, 1
// findings at error severity (or failing tests, a denied decision, a
// server that stopped on an error), 2 usage or unusable input.
package main
