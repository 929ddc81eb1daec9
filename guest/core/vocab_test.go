package core

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// vocabLanguages are the languages the detector covers, one data file each.
var vocabLanguages = []string{"de", "en", "es", "fr", "it", "ja", "ko", "pt", "ru", "zh"}

func TestVocabLoads(t *testing.T) {
	files := embeddedVocab()
	var names []string
	for _, f := range files {
		names = append(names, f.name)
		if !strings.Contains(f.text, "NOT yet reviewed by a native speaker") {
			t.Errorf("%s does not say whether a native speaker reviewed it", f.name)
		}
	}
	for _, l := range vocabLanguages {
		if !slices.Contains(names, "vocab/"+l+".txt") {
			t.Errorf("no vocab/%s.txt", l)
		}
	}
	tb, err := loadVocab(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.first) < 250 || len(tb.cjk) < 150 || len(tb.stop) < 100 {
		t.Errorf("tables look empty: %d first words, %d CJK patterns, %d stopwords", len(tb.first), len(tb.cjk), len(tb.stop))
	}
}

// TestVocabOneLanguage checks that a language's file alone drives the detector: a table built from English
// alone does not know Spanish, and adding es.txt teaches it.
func TestVocabOneLanguage(t *testing.T) {
	var en, es vocabFile
	for _, f := range embeddedVocab() {
		switch f.name {
		case "vocab/en.txt":
			en = f
		case "vocab/es.txt":
			es = f
		}
	}
	f := fieldInfo{Name: "campo_3", Title: "Contraseña de la cuenta", Type: "string"}
	tbEN, err := loadVocab([]vocabFile{en})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := detectSecretWith(tbEN, &f); got != secretNone {
		t.Errorf("English alone: got %q", got)
	}
	tbES, err := loadVocab([]vocabFile{en, es})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := detectSecretWith(tbES, &f); got != secretPassword {
		t.Errorf("English and Spanish: got %q, want password", got)
	}
}

func TestVocabErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"password\n", "x.txt:1: a term before the first [section]"},
		{"# c\n\n[pasword]\nx\n", `x.txt:3: unknown section "pasword"`},
		{"[password\n", "x.txt:1: a section header ends with ]"},
		{"[]\n", "x.txt:1: empty section header"},
		{"[password quick]\n", `x.txt:1: unknown modifier "quick"`},
		{"[password if=]\n", `x.txt:1: bad context name ""`},
		{"[password if=Card]\n", `x.txt:1: bad context name "Card"`},
		{"[stop extra]\n", "x.txt:1: [stop] takes nothing more"},
		{"[off all]\n", "x.txt:1: write [off CLASSES SCOPE], e.g. [off all segment]"},
		{"[off pin,cw segment]\n", `x.txt:1: unknown class "cw"`},
		{"[off all near]\n", `x.txt:1: unknown scope "near" (segment, next, after or field)`},
		{"[context]\n", "x.txt:1: write [context NAME]"},
		{"[password]\npass*word\n", "x.txt:2: a * must end a word"},
		{"[password]\n*\n", "x.txt:2: a * must end a word"},
		{"[password]\n---\n", "x.txt:2: no word in the term"},
		{"[password]\n密码*\n", "x.txt:2: a CJK term cannot be a stem (*)"},
		{"[password name-only]\n密码\n", "x.txt:2: a CJK term cannot be name-only, alone or soft"},
		{"[off all next]\n最大\n", "x.txt:2: a CJK term can turn classes off only in its segment or field"},
		{"[stop]\n的\n", "x.txt:2: this section takes no CJK terms"},
		{"[identity]\ne mail\n", `x.txt:2: this section takes one word a line, "e mail" is 2`},
		{"[identity]\n2fa\n", `x.txt:2: this section takes one word a line, "2fa" is 2`},
		{"[neutral]\nval*\n", "x.txt:2: this section takes no stems (*)"},
		{"[stop]\nthe\n[password]\nthe\n", "x.txt:4: the term holds only stopwords"},
		{"[password]\nok\n\xff\n", "x.txt:3: not UTF-8"},
	} {
		_, err := loadVocab([]vocabFile{{"x.txt", tc.text}})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.text, err, tc.want)
		}
	}
	var b strings.Builder
	for i := range 33 {
		b.WriteString("[password if=g" + strconv.Itoa(i) + "]\n")
	}
	if _, err := loadVocab([]vocabFile{{"x.txt", b.String()}}); err == nil || err.Error() != "x.txt:33: more than 32 context groups" {
		t.Errorf("33 groups: %v", err)
	}
	// A mistake in a second file names that file.
	if _, err := loadVocab([]vocabFile{{"a.txt", "[stop]\nthe\n"}, {"b.txt", "[stop]\n\n[bad]\n"}}); err == nil || err.Error() != `b.txt:3: unknown section "bad"` {
		t.Errorf("second file: %v", err)
	}
}

func TestVocabNormTerm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // words joined by |, or the CJK pattern after "cjk:"
	}{
		{"Contraseña", "contrasena"},
		{"mot-de-passe", "mot|de|passe"},
		{"clé d'API", "cle|d|api"},
		{"Schlüssel*", "schlussel*"},
		{"Ёлка", "елка"},
		{"ＡＰＩ key", "api|key"},
		{"CVV2", "cvv|2"},
		{"парол* фраз*", "парол*|фраз*"},
		{"Straße", "strasse"},
		{"two  words ", "two|words"},
		{"api key*", "api|key*"},
		{"API 密钥", "cjk:api密钥"},
		{"보안 코드", "cjk:보안코드"},
		{"ＰＩＮコード", "cjk:pinコード"},
	} {
		norm, cjk, msg := normTerm(tc.in)
		got := strings.ReplaceAll(norm, " ", "|")
		if cjk != "" {
			got = "cjk:" + cjk
		}
		if msg != "" || got != tc.want {
			t.Errorf("%q: got %q (%s), want %q", tc.in, got, msg, tc.want)
		}
	}
}

// FuzzVocab feeds the loader arbitrary files: it returns a table or a file:line error, never panics, and
// the detector runs on any table it returns.
func FuzzVocab(f *testing.F) {
	for _, s := range []string{
		"[password]\ncontraseña\n", "[stop]\nde\n[password]\nmot de passe\n",
		"[otp if=sent soft]\ncode\n[context sent]\nsms\n", "[off all segment]\nmax\n最大\n",
		"[pin]\n暗証番号\n[off pin field]\npostal\n", "[not-secret]\npublic key*\n", "[password\n", "[x]\n*",
		"[split]\nnew\n[nosplit]\nnew\n[ending]\ntoken\n", "[password unless=a,b alone]\nclave\n[context a]\nlogin*\n",
	} {
		f.Add(s)
	}
	fields := []fieldInfo{
		{Name: "newpassword", Type: "string"}, {Name: "x", Title: "Contraseña (mínimo 8)", Type: "string"},
		{Name: "code", Description: "The code we sent by SMS", Type: "string"}, {Name: "pin", Title: "最大令牌数", Type: "string"},
		{Name: "clave", Title: "Clave", Description: "login", Type: "integer", WriteOnly: true},
	}
	f.Fuzz(func(t *testing.T, text string) {
		tb, err := loadVocab([]vocabFile{{"fuzz.txt", text}})
		if err != nil {
			msg := err.Error()
			rest, ok := strings.CutPrefix(msg, "fuzz.txt:")
			if !ok {
				t.Fatalf("error without file: %q", msg)
			}
			n, _, _ := strings.Cut(rest, ":")
			line, aerr := strconv.Atoi(n)
			if aerr != nil || line < 1 || line > strings.Count(text, "\n")+1 {
				t.Fatalf("error with a bad line: %q", msg)
			}
			return
		}
		for i := range fields {
			got, why := detectSecretWith(tb, &fields[i])
			if (got == secretNone) != (why == "") || len(why) > maxReasonLen || !utf8.ValidString(why) {
				t.Fatalf("class %q with reason %q", got, why)
			}
		}
	})
}

// TestVocabLanguage checks the language the detector reports: the one file that holds the deciding term.
func TestVocabLanguage(t *testing.T) {
	tb := tables()
	for _, tc := range []struct {
		f    fieldInfo
		lang string
	}{
		{fieldInfo{Name: "x", Title: "Contraseña", Type: "string"}, "es"},
		{fieldInfo{Name: "x", Title: "Passwort", Type: "string"}, "de"},
		{fieldInfo{Name: "x", Title: "Номер карты", Type: "string"}, "ru"},
		{fieldInfo{Name: "x", Title: "暗証番号", Type: "string"}, "ja"},
		{fieldInfo{Name: "x", Title: "비밀번호", Type: "string"}, "ko"},
		{fieldInfo{Name: "x", Title: "支付密码", Type: "string"}, "zh"},
		{fieldInfo{Name: "api_key", Type: "string"}, "en"},
		{fieldInfo{Name: "x", Title: "Senha", Type: "string"}, "pt"},
		{fieldInfo{Name: "x", Title: "Mot de passe", Type: "string"}, "fr"},
		{fieldInfo{Name: "x", Title: "Codice OTP", Type: "string"}, "it"},
		{fieldInfo{Name: "x", Title: "Пароль", Type: "string"}, "ru"},
		{fieldInfo{Name: "x", Title: "API-Schlüssel", Type: "string"}, "de"},
		{fieldInfo{Name: "x", Title: "Código PIN", Type: "string"}, "en"}, // the acronym decides
		{fieldInfo{Name: "contraseña", Type: "string", WriteOnly: true}, "es"},
		{fieldInfo{Name: "x", Type: "string", WriteOnly: true}, ""},
		// A keyword, not a word, made these secrets (the word only chose the class).
		{fieldInfo{Name: "x", Title: "Passwort-Hinweis", Type: "string", Format: "password"}, ""},
		// A word that several languages share names none.
		{fieldInfo{Name: "x", Title: "Código recibido", Type: "string"}, ""}, // es and pt
		{fieldInfo{Name: "x", Title: "Secret", Type: "string"}, ""},          // de, en and fr
		{fieldInfo{Name: "notes", Type: "string"}, ""},
	} {
		f := tc.f
		_, _, lang := detectSecretLang(tb, &f)
		if lang != tc.lang {
			t.Errorf("%+v: language %q, want %q", f, lang, tc.lang)
		}
	}
}
