package core

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusClass maps the corpus' "class" values onto the detector's constants.
var corpusClass = map[string]secretClass{
	"none":          secretNone,
	"password":      secretPassword,
	"api_key":       secretAPIKey,
	"access_token":  secretAccessToken,
	"client_secret": secretClientSecret,
	"private_key":   secretPrivateKey,
	"payment_card":  secretPaymentCard,
	"cvv":           secretCVV,
	"pin":           secretPIN,
	"otp":           secretOTP,
	"recovery_code": secretRecoveryCode,
}

type secretCase struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Lang   string          `json:"lang"`
	Secret bool            `json:"secret"`
	Class  string          `json:"class"`
	Why    string          `json:"why"`

	file string
	info fieldInfo
	want secretClass
}

// corpusSchema is the part of a property schema the detector reads.
type corpusSchema struct {
	Type        any               `json:"type"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Format      string            `json:"format"`
	WriteOnly   bool              `json:"writeOnly"`
	Enum        []json.RawMessage `json:"enum"`
	OneOf       []json.RawMessage `json:"oneOf"`
	AnyOf       []json.RawMessage `json:"anyOf"`
	Items       *struct {
		Enum  []json.RawMessage `json:"enum"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
	} `json:"items"`
}

func schemaFieldInfo(name string, raw json.RawMessage) (fieldInfo, error) {
	var s corpusSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		return fieldInfo{}, err
	}
	typ, _ := s.Type.(string)
	choice := s.Enum != nil || s.OneOf != nil || s.AnyOf != nil ||
		s.Items != nil && (s.Items.Enum != nil || s.Items.AnyOf != nil || s.Items.OneOf != nil)
	return fieldInfo{
		Name: name, Title: s.Title, Description: s.Description, Format: s.Format,
		Type: typ, WriteOnly: s.WriteOnly, Choice: choice,
	}, nil
}

func loadSecretCorpus(tb testing.TB, file string) []secretCase {
	tb.Helper()
	path := filepath.Join("..", "..", "testdata", "secret-fields", file)
	f, err := os.Open(path)
	if err != nil {
		tb.Fatalf("open corpus: %v", err)
	}
	defer f.Close()
	var out []secretCase
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var c secretCase
		if err := json.Unmarshal([]byte(text), &c); err != nil {
			tb.Fatalf("%s:%d: %v", file, line, err)
		}
		want, ok := corpusClass[c.Class]
		if !ok {
			tb.Fatalf("%s:%d: unknown class %q", file, line, c.Class)
		}
		if c.Secret != (want != secretNone) {
			tb.Fatalf("%s:%d: secret=%v disagrees with class %q", file, line, c.Secret, c.Class)
		}
		if seen[c.ID] {
			tb.Fatalf("%s:%d: duplicate id %s", file, line, c.ID)
		}
		seen[c.ID] = true
		if c.info, err = schemaFieldInfo(c.Name, c.Schema); err != nil {
			tb.Fatalf("%s:%d: schema: %v", file, line, err)
		}
		c.want, c.file = want, file
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// classStats counts, per class, the true positives, false positives and false negatives.
type classStats struct{ tp, fp, fn int }

func logClassStats(t *testing.T, title string, stats map[secretClass]*classStats) {
	t.Helper()
	var names []string
	for c := range stats {
		names = append(names, string(c))
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  %-14s %4s %4s %4s %9s %7s\n", title, "class", "tp", "fp", "fn", "precision", "recall")
	for _, n := range names {
		s := stats[secretClass(n)]
		label := n
		if n == "" {
			label = "(none)"
		}
		fmt.Fprintf(&b, "  %-14s %4d %4d %4d %9s %7s\n", label, s.tp, s.fp, s.fn, ratio(s.tp, s.tp+s.fp), ratio(s.tp, s.tp+s.fn))
	}
	t.Log(b.String())
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

// corpusFiles lists the labelled sets in testdata/secret-fields.
func corpusFiles(tb testing.TB) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "secret-fields", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no corpus files: %v", err)
	}
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

// langStats counts the secret/not verdicts of one language.
type langStats struct{ tp, fp, fn, tn, classOK int }

// Per-language floors: below minLangCases a language's figures mean little; below minRecall or above
// maxFalsePositive the detector fails that language.
const (
	minLangCases     = 40
	minRecall        = 0.95
	maxFalsePositive = 0.05
)

func TestSecretCorpus(t *testing.T) {
	langs := map[string]*langStats{}
	for _, file := range corpusFiles(t) {
		t.Run(strings.TrimSuffix(file, ".jsonl"), func(t *testing.T) {
			cases := loadSecretCorpus(t, file)
			if file == "extra.jsonl" && len(cases) < 200 {
				t.Errorf("extra corpus has %d cases, want at least 200", len(cases))
			}
			stats := map[secretClass]*classStats{}
			for c := range corpusClass {
				stats[corpusClass[c]] = &classStats{}
			}
			verdictOK := 0
			for _, c := range cases {
				got, why := detectSecret(&c.info)
				ls := langs[c.Lang]
				if ls == nil {
					ls = &langStats{}
					langs[c.Lang] = ls
				}
				switch {
				case got != secretNone && c.want != secretNone:
					ls.tp++
				case got != secretNone:
					ls.fp++
				case c.want != secretNone:
					ls.fn++
				default:
					ls.tn++
				}
				if (got != secretNone) == (c.want != secretNone) {
					verdictOK++
				}
				if got == c.want {
					ls.classOK++
					stats[got].tp++
					continue
				}
				stats[got].fp++
				stats[c.want].fn++
				t.Errorf("%s %s name=%q title=%q: got %q (%s), want %q (%s)",
					c.file, c.ID, c.Name, c.info.Title, got, why, c.want, c.Why)
			}
			logClassStats(t, fmt.Sprintf("%s: %d cases, secret/not verdict right on %d", file, len(cases), verdictOK), stats)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "secret/not verdict per language, all files\n  %-6s %5s %5s %5s %5s %9s %7s %8s %9s\n",
		"lang", "cases", "tp", "fp", "fn", "precision", "recall", "fp rate", "class ok")
	names := slices.Sorted(maps.Keys(langs))
	for _, l := range names {
		s := langs[l]
		n := s.tp + s.fp + s.fn + s.tn
		fmt.Fprintf(&b, "  %-6s %5d %5d %5d %5d %9s %7s %8s %9s\n", l, n, s.tp, s.fp, s.fn,
			ratio(s.tp, s.tp+s.fp), ratio(s.tp, s.tp+s.fn), ratio(s.fp, s.fp+s.tn), ratio(s.classOK, n))
	}
	t.Log(b.String())
	for _, l := range vocabLanguages {
		s := langs[l]
		if s == nil {
			t.Errorf("%s: no labelled cases", l)
			continue
		}
		if n := s.tp + s.fp + s.fn + s.tn; n < minLangCases {
			t.Errorf("%s: %d labelled cases, want at least %d", l, n, minLangCases)
		}
		if s.tp+s.fn == 0 || s.fp+s.tn == 0 {
			t.Errorf("%s: needs both secret fields and look-alikes", l)
			continue
		}
		if r := float64(s.tp) / float64(s.tp+s.fn); r < minRecall {
			t.Errorf("%s: recall %.3f below %.2f", l, r, minRecall)
		}
		if r := float64(s.fp) / float64(s.fp+s.tn); r > maxFalsePositive {
			t.Errorf("%s: false-positive rate %.3f above %.2f", l, r, maxFalsePositive)
		}
	}
}

// TestSecretCorpusReasons checks that every reason is short, quotes schema text only, and is empty for none.
func TestSecretCorpusReasons(t *testing.T) {
	for _, file := range corpusFiles(t) {
		for _, c := range loadSecretCorpus(t, file) {
			got, why := detectSecret(&c.info)
			checkReason(t, &c.info, got, why)
		}
	}
}

func checkReason(t *testing.T, f *fieldInfo, got secretClass, why string) {
	t.Helper()
	if got == secretNone {
		if why != "" {
			t.Errorf("%q: no secret but reason %q", f.Name, why)
		}
		return
	}
	if why == "" || len(why) > maxReasonLen || !utf8.ValidString(why) {
		t.Errorf("%q: bad reason %q (%d bytes)", f.Name, why, len(why))
	}
	// A quoted excerpt must come from the schema's own text.
	if i := strings.IndexByte(why, '"'); i >= 0 {
		j := strings.IndexByte(why[i+1:], '"')
		if j < 0 {
			return
		}
		q := why[i+1 : i+1+j]
		if strings.ContainsRune(q, '\\') {
			return // escaped text, compared loosely
		}
		all := f.Name + "\x00" + f.Title + "\x00" + f.Description + "\x00" + f.Format
		if !strings.Contains(all, q) {
			t.Errorf("%q: reason %q quotes %q, which is not in the schema", f.Name, why, q)
		}
	}
}

// TestSecretLookAlikes lists fields that look like secrets and are not.
func TestSecretLookAlikes(t *testing.T) {
	str := func(name, title, desc string) fieldInfo {
		return fieldInfo{Name: name, Title: title, Description: desc, Type: "string"}
	}
	num := func(name, title string) fieldInfo {
		return fieldInfo{Name: name, Title: title, Type: "integer"}
	}
	choice := func(name, title string) fieldInfo {
		return fieldInfo{Name: name, Title: title, Type: "string", Choice: true}
	}
	for _, f := range []fieldInfo{
		num("max_tokens", ""),
		num("maxTokens", "Max tokens"),
		str("max_tokens", "", ""), // a count even when typed as a string
		num("token_count", ""),
		str("token_count", "Token count", ""),
		num("context_window", "Context window (tokens)"),
		num("nb_jetons", "Nombre maximal de jetons"),
		num("zuida_lingpai", "最大令牌数"),
		str("max_token_str", "最大令牌数", ""),
		num("kolvo", "Количество токенов"),
		str("kolvo_tokenov", "Количество токенов", ""),
		str("public_key", "", ""),
		str("publicKey", "Public key", ""),
		str("kokai_kagi", "公開鍵", ""),
		str("pubkey", "Публичный ключ", ""),
		str("gpg_key_id", "GPG key ID", "Long ID of your public key"),
		choice("key_algorithm", "Key algorithm"),
		str("key_algorithm", "Key algorithm", ""),
		choice("key", "Musical key"),
		num("password_min_length", "Minimum password length"),
		str("password_hint", "", ""),
		str("passwordHint", "Password hint", ""),
		str("mima_tishi", "密码提示", ""),
		str("password_manager", "", ""),
		choice("password_manager", "Which password manager do you use?"),
		str("pin_code", "PIN code", "Postal code of the delivery address"),
		str("postal_pin", "", ""),
		str("pinterest_url", "", ""),
		str("passport_number", "", ""),
		str("numero_passeport", "Numéro de passeport", ""),
		num("passenger_count", ""),
		str("iban", "IBAN", ""),
		str("routing_number", "", ""),
		str("clabe", "CLABE interbancaria", ""),
		str("chave_aleatoria", "Chave aleatória do Pix", ""),
		str("wallet_address", "", ""),
		str("client_id", "", ""),
		str("clientId", "OAuth client ID", ""),
		str("promo_code", "", ""),
		str("card_nickname", "", ""),
		choice("card_brand", "Card brand"),
		{Name: "otp_enabled", Type: "boolean"},
		str("otp_enabled", "", ""),
		{Name: "token_expiry", Type: "string", Format: "date-time"},
		str("token_expiry", "", ""),
		str("recovery_email", "", ""),
		choice("security_question", "Security question"),
		str("keyword", "", ""),
		str("mot_cle", "Mot-clé", ""),
		str("palabra_clave", "Palabra clave", ""),
		str("schluesselwort", "Schlüsselwort", ""),
		choice("teclado", "Distribución del teclado"),
		choice("tastatur", "Tastaturbelegung"),
		str("keyboard_layout", "", ""),
		{Name: "turkey_weight", Type: "number"},
		str("turkey_weight", "", ""),
		str("house_number", "", ""),
		str("hausnummer", "Hausnummer", ""),
		str("account_holder", "", ""),
		str("kontoinhaber", "Kontoinhaber", ""),
		str("cid", "Correlation ID", ""),
		str("pwd", "Working directory", ""),
		str("sk", "Sort key", ""),
		str("pk", "", ""),
		str("monkey", "", ""),
		str("passage", "", ""),
		str("passwordless_login", "", ""),
		str("spinner", "", ""),
		str("tokenizer", "", ""),
	} {
		f := f
		if got, why := detectSecret(&f); got != secretNone {
			t.Errorf("look-alike %q (title %q, type %s) flagged as %q: %s", f.Name, f.Title, f.Type, got, why)
		}
	}
}

// TestSecretNameVariants checks snake, camel, kebab, glued and abbreviated names for every class.
func TestSecretNameVariants(t *testing.T) {
	for class, names := range map[secretClass][]string{
		secretPassword: {"password", "user_password", "userPassword", "user-password", "USER_PASSWORD", "newpassword",
			"passwd", "pwd", "pw", "db_pass", "dbPass", "rootPw", "pass_phrase", "passphrase", "passcode", "mot_de_passe",
			"motDePasse", "contrasena", "senha", "passwort", "kennwort", "security_answer", "creds"},
		secretAPIKey: {"api_key", "apiKey", "api-key", "APIKey", "apikey", "API_KEY", "x-api-key", "openai.api_key",
			"secret_key", "secretKey", "app_secret", "stripe_sk", "webhook_secret"},
		secretAccessToken: {"access_token", "accessToken", "access-token", "accesstoken", "AccessToken", "token",
			"auth_token", "authTok", "bearer_token", "refreshToken", "session_token", "id_token", "jwt", "github_pat"},
		secretClientSecret: {"client_secret", "clientSecret", "client-secret", "clientsecret", "CLIENT_SECRET",
			"oauth_client_secret", "consumer_secret"},
		secretPrivateKey: {"private_key", "privateKey", "private-key", "privatekey", "privkey", "priv_key",
			"ssh_private_key", "seed_phrase", "seedPhrase", "mnemonic", "recovery_phrase"},
		secretPaymentCard: {"card_number", "cardNumber", "card-number", "cardnumber", "ccnum", "cc_num",
			"cc-number", "ccNumber", "credit_card_number", "creditCard", "card_no"},
		secretCVV: {"cvv", "cvc", "cvn", "cvv2", "card_cvv", "cardCvc", "cc-csc", "card_security_code", "cardVerificationValue"},
		secretPIN: {"pin", "card_pin", "cardPin", "atm-pin", "pin_code", "pincode", "PIN", "sim_pin"},
		secretOTP: {"otp", "otp_code", "otpCode", "totp", "one-time-code", "oneTimeCode", "onetimecode", "2fa_code",
			"mfaCode", "mfa", "verification_code", "verificationCode", "sms_code", "auth_code"},
		secretRecoveryCode: {"recovery_code", "recoveryCode", "recovery-code", "recoverycode", "backup_code",
			"backupCodes", "backup-codes", "recovery_key"},
	} {
		for _, n := range names {
			f := fieldInfo{Name: n, Type: "string"}
			got, why := detectSecret(&f)
			if got != class {
				t.Errorf("name %q: got %q (%s), want %q", n, got, why, class)
			}
			checkReason(t, &f, got, why)
		}
	}
}

// TestSecretPrecedence pins the documented precedence between evidence.
func TestSecretPrecedence(t *testing.T) {
	for _, tc := range []struct {
		f    fieldInfo
		want secretClass
		why  string
	}{
		{fieldInfo{Name: "password", Type: "boolean"}, secretNone, "a boolean is never a secret"},
		{fieldInfo{Name: "password", Type: "string", Format: "password", Choice: true}, secretNone, "a choice is picked, not typed"},
		{fieldInfo{Name: "answer", Title: "Security question", Type: "string", Choice: true}, secretNone, "question choice"},
		{fieldInfo{Name: "answer", Title: "Answer to your security question", Type: "string"}, secretPassword, "answer"},
		{fieldInfo{Name: "x", Type: "string", Format: "password"}, secretPassword, "format password alone"},
		{fieldInfo{Name: "x", Type: "string", WriteOnly: true}, secretPassword, "writeOnly alone"},
		{fieldInfo{Name: "pin", Type: "string", WriteOnly: true}, secretPIN, "writeOnly takes its class from the text"},
		{fieldInfo{Name: "password_hint", Type: "string", Format: "password"}, secretPassword, "format password beats a negator"},
		{fieldInfo{Name: "cvv", Type: "integer"}, secretCVV, "a CVV may be a number"},
		{fieldInfo{Name: "pin", Type: "integer"}, secretPIN, "a PIN may be a number"},
		{fieldInfo{Name: "api_key", Type: "integer"}, secretNone, "an API key is never a number"},
		{fieldInfo{Name: "token", Type: "number"}, secretNone, "a number named token is a count"},
		{fieldInfo{Name: "pw", Title: "Password hint", Type: "string"}, secretNone, "a negated title beats the name"},
		{fieldInfo{Name: "field_1", Title: "Password", Type: "string"}, secretPassword, "the title decides"},
		{fieldInfo{Name: "value", Description: "Your Stripe secret key", Type: "string"}, secretAPIKey, "opaque name: the description decides"},
		{fieldInfo{Name: "repository", Description: "Repository to clone with your access token", Type: "string"}, secretNone,
			"a secret mentioned late in the description of another thing"},
		{fieldInfo{Name: "cid", Description: "4 digits on the front of your Amex card", Type: "string"}, secretCVV, "cid near a card"},
		{fieldInfo{Name: "cid", Type: "string"}, secretNone, "cid alone is an identifier"},
		{fieldInfo{Name: "security_code", Description: "We sent it by SMS", Type: "string"}, secretOTP, "a sent security code is an OTP"},
		{fieldInfo{Name: "code", Type: "string"}, secretNone, "a bare code is not a secret"},
		{fieldInfo{Name: "code", Description: "The 6-digit code we sent to your phone", Type: "string"}, secretOTP, "a sent code"},
		{fieldInfo{Name: "key_passphrase", Title: "Private key password", Type: "string"}, secretPassword, "password beats private key"},
		{fieldInfo{Name: "card_pin", Title: "Card PIN", Type: "string"}, secretPIN, "PIN beats card number"},
		{fieldInfo{Name: "otp_password", Title: "One-time password", Type: "string"}, secretOTP, "one-time password is an OTP"},
		{fieldInfo{Name: "pass", Title: "Password (min. 8 characters)", Type: "string"}, secretPassword, "a rule in parentheses is no negator"},
		{fieldInfo{Name: "clave", Type: "string"}, secretPassword, "a lone 'clave' is a password"},
		{fieldInfo{Name: "clave_producto", Title: "Clave del producto", Type: "string"}, secretNone, "'clave' without login context"},
	} {
		f := tc.f
		got, why := detectSecret(&f)
		if got != tc.want {
			t.Errorf("%s: %+v: got %q (%s), want %q", tc.why, tc.f, got, why, tc.want)
		}
		checkReason(t, &f, got, why)
	}
}

func TestSecretReasonFormat(t *testing.T) {
	f := fieldInfo{Name: "motDePasse", Title: "Nouveau mot de passe", Type: "string"}
	got, why := detectSecret(&f)
	if got != secretPassword || why != `title "Nouveau mot de passe" means password` {
		t.Errorf("got %q, %q", got, why)
	}
	long := fieldInfo{Name: "x", Title: strings.Repeat("Bitte geben Sie hier ", 10) + "Ihr Passwort ein", Type: "string"}
	got, why = detectSecret(&long)
	if got != secretPassword || len(why) > maxReasonLen {
		t.Errorf("long title: got %q, %q (%d bytes)", got, why, len(why))
	}
	if got, why := detectSecret(nil); got != secretNone || why != "" {
		t.Errorf("nil: %q %q", got, why)
	}
}

func FuzzDetectSecret(f *testing.F) {
	for _, s := range [][3]string{
		{"password", "", ""}, {"max_tokens", "Max tokens", ""}, {"pin", "PIN / código postal", "Delivery"},
		{"x", "秘密の質問の答え", ""}, {"apiKey", "Clé d'API", "Trouvez-la dans vos paramètres."},
		{"", "\xff\xfe", "(((("}, {"ÀÉÎ", "ｐａｓｓｗｏｒｄ", "Ё"}, {"a-b.c_d", " - ", "::"},
	} {
		f.Add(s[0], s[1], s[2], false)
	}
	f.Fuzz(func(t *testing.T, name, title, desc string, writeOnly bool) {
		for _, typ := range []string{"string", "integer"} {
			fi := fieldInfo{Name: name, Title: title, Description: desc, Type: typ, WriteOnly: writeOnly}
			got, why := detectSecret(&fi)
			if _, ok := classIndex(got); !ok {
				t.Fatalf("unknown class %q", got)
			}
			if (got == secretNone) != (why == "") {
				t.Fatalf("class %q with reason %q", got, why)
			}
			if len(why) > maxReasonLen || !utf8.ValidString(why) {
				t.Fatalf("reason %q: %d bytes", why, len(why))
			}
			if got2, why2 := detectSecret(&fi); got2 != got || why2 != why {
				t.Fatalf("not deterministic: %q %q vs %q %q", got, why, got2, why2)
			}
		}
	})
}

func classIndex(c secretClass) (int, bool) {
	if c == secretNone {
		return -1, true
	}
	for i, k := range classByIndex {
		if k == c {
			return i, true
		}
	}
	return 0, false
}

func BenchmarkDetectSecret(b *testing.B) {
	var fields []fieldInfo
	for _, file := range corpusFiles(b) {
		for _, c := range loadSecretCorpus(b, file) {
			fields = append(fields, c.info)
		}
	}
	tables() // build the tables outside the timing
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range fields {
			detectSecret(&fields[k])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(fields)), "ns/field")
}

func BenchmarkSecretTables(b *testing.B) {
	files := embeddedVocab()
	for i := 0; i < b.N; i++ {
		if _, err := loadVocab(files); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDetectSecretHostile measures the worst inputs: texts at the length cap, full of secret words,
// negators and segments.
func BenchmarkDetectSecretHostile(b *testing.B) {
	var fields []fieldInfo
	for _, s := range []string{
		strings.Repeat("password ", 500),
		strings.Repeat("card number pin cvv token of max ", 100),
		strings.Repeat("密码提示令牌验证码", 300),
		strings.Repeat("aB", 3000),
		strings.Repeat("x (", 1500),
		strings.Repeat("номер карты ", 300),
	} {
		fields = append(fields, fieldInfo{Name: s, Title: s, Description: s, Type: "string"})
	}
	tables()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range fields {
			detectSecret(&fields[k])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(fields)), "ns/field")
}
