package mcphttp

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStreamsBound(t *testing.T) {
	s := &Streams{Max: 3, PerPrincipal: 2}
	a1, ok1 := s.Acquire("alice")
	_, ok2 := s.Acquire("alice")
	if _, ok := s.Acquire("alice"); !ok1 || !ok2 || ok {
		t.Fatal("alice's third stream was taken past her 2")
	}
	_, okb := s.Acquire("bob")
	if _, ok := s.Acquire("carol"); !okb || ok {
		t.Fatal("carol's stream was taken past the 3 in all")
	}
	a1()
	a1() // a second release gives nothing back twice
	if _, ok := s.Acquire("carol"); !ok {
		t.Fatal("a released stream's room was not given back")
	}
	if _, ok := s.Acquire("dave"); ok {
		t.Fatal("one release made room for two")
	}

	w := httptest.NewRecorder()
	WriteBusy(w, json.RawMessage(`7`))
	if w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"id":7`) || !strings.Contains(w.Body.String(), `-32000`) {
		t.Fatalf("busy answer: %d %v %s", w.Code, w.Header(), w.Body)
	}
}
