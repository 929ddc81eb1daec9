// Package deploy holds no code: it is the module of the deployment
// examples' tests (its own, so that the Kubernetes API types they decode
// with never reach mrtr-wasm's go.mod). See README.md.
package deploy
