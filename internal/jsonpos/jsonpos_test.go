package jsonpos

import (
	"errors"
	"testing"
)

func TestIndex(t *testing.T) {
	src := "{\n  \"a\": [1,\n    {\"b/c\": \"x\"}],\n  \"d\": {\"e\": null}\n}"
	ix, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for ptr, line := range map[string]int{"": 1, "/a": 2, "/a/0": 2, "/a/1": 3, "/a/1/b~1c": 3, "/d/e": 4, "/d/e/zz": 4, "/nope": 1} {
		if got := ix.Line(ptr); got != line {
			t.Errorf("Line(%q) = %d, want %d", ptr, got, line)
		}
	}
	_, err = Parse([]byte("{\n\"a\": 1,\n}"))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 3 {
		t.Errorf("syntax error %v", err)
	}
	ix, _ = Parse([]byte(`{"a":1,"a":2}`))
	if d := ix.Duplicates(); len(d) != 1 || d[0] != "/a" {
		t.Errorf("duplicates %v", d)
	}
}
