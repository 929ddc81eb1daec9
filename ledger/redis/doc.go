// Package redis is the replay ledger in Redis, for several instances.
// Importing it makes ledger.Open accept "redis://…" and "rediss://…";
// it lives apart from package ledger so that programs that do not use it
// do not link go-redis.
package redis
