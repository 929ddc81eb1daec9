// Package audit is the audit log of serve and the proxy (--audit FILE):
// one JSON line per input round and decision, each carrying the SHA-256
// of the line before it, so that the file is a hash chain. Changing,
// removing or reordering a record breaks the chain at that record, and
// Verify names it. Answers and arguments appear only as digests, form
// fields only by name and kind.
//
// A file that reaches its size limit is renamed (FILE.<time>) and a new
// one begins with a record that carries the last hash of the old one, so
// a series of files is one chain. The chain cannot show that records were
// cut from the end of the newest file: compare the head Verify reports
// with the one the writer last logged (Head), or ship the records off the
// machine as they are written.
package audit
