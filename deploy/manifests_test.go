package deploy

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite kubernetes/policy-configmap.yaml from ../policies")

// object is one decoded manifest document.
type object struct {
	file string
	kind string
	obj  any
}

// decodeAll reads every document of every manifest strictly: an unknown
// or repeated field, or a kind these tests do not know, is an error.
func decodeAll(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var out []object
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range splitDocuments(b) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				obj = &appsv1.Deployment{}
			case "apps/v1 StatefulSet":
				obj = &appsv1.StatefulSet{}
			case "v1 Service":
				obj = &corev1.Service{}
			case "v1 ConfigMap":
				obj = &corev1.ConfigMap{}
			case "policy/v1 PodDisruptionBudget":
				obj = &policyv1.PodDisruptionBudget{}
			default:
				t.Fatalf("%s, document %d: kind %q %q is not checked by this test: add it", f, i+1, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Fatalf("%s, document %d (%s): %v", f, i+1, tm.Kind, err)
			}
			out = append(out, object{file: f, kind: tm.Kind, obj: obj})
		}
	}
	return out
}

func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func TestManifestsDecodeStrictly(t *testing.T) {
	objs := decodeAll(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.kind)
	}
	for _, want := range []string{"Deployment", "StatefulSet", "Service", "ConfigMap", "PodDisruptionBudget"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("no %s among the manifests (%v)", want, kinds)
		}
	}
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	b, err := os.ReadFile("kubernetes/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("kubernetes/*.yaml")
	var want []string
	for _, f := range files {
		if n := filepath.Base(f); n != "kustomization.yaml" {
			want = append(want, n)
		}
	}
	got := slices.Clone(k.Resources)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, manifests %v", got, want)
	}
}

// TestProxyDeployment holds the example to what the README promises: two
// replicas of a non-root, read-only container, keys from a Secret, the
// policy from the ConfigMap, probes on /healthz and /readyz, and flags
// the binary has.
func TestProxyDeployment(t *testing.T) {
	var d *appsv1.Deployment
	var cm *corev1.ConfigMap
	for _, o := range decodeAll(t) {
		switch v := o.obj.(type) {
		case *appsv1.Deployment:
			if v.Name == "mrtr-proxy" {
				d = v
			}
		case *corev1.ConfigMap:
			if v.Name == "mrtr-policy" {
				cm = v
			}
		}
	}
	if d == nil || cm == nil {
		t.Fatal("no Deployment mrtr-proxy or ConfigMap mrtr-policy")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("the pod must run as a non-root uid: %+v", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, corev1.Capability("ALL")) {
		t.Errorf("the container must be read-only, without privilege escalation, with every capability dropped: %+v", sc)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe: %+v, want GET /healthz", p)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe: %+v, want GET /readyz", p)
	}
	keys := false
	for _, e := range c.Env {
		if e.Name == "MRTR_KEYS" {
			keys = e.Value == "" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
		}
	}
	if !keys {
		t.Error("MRTR_KEYS must come from a Secret (secretKeyRef), never a literal value")
	}
	if c.Args[0] != "proxy" {
		t.Fatalf("args start %q, want the proxy command", c.Args[0])
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			t.Errorf("arg %q: write flags as --name=value", a)
		}
		flags[name] = val
	}
	known := proxyFlags(t)
	for name := range flags {
		if !known[name] {
			t.Errorf("--%s is not a flag of mrtr-wasm proxy", name)
		}
	}
	if got, _ := seconds(flags["shutdown-timeout"]); pod.TerminationGracePeriodSeconds == nil || int64(got) >= *pod.TerminationGracePeriodSeconds {
		t.Errorf("terminationGracePeriodSeconds must exceed --shutdown-timeout (%s)", flags["shutdown-timeout"])
	}
	// The policy volume maps every file of the ConfigMap, each where
	// --policy expects it (the data file under data/).
	mounted := map[string]string{}
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "mrtr-policy" {
			for _, it := range v.ConfigMap.Items {
				mounted[it.Key] = it.Path
			}
		}
	}
	for key := range cm.Data {
		want := key
		if strings.HasSuffix(key, ".json") {
			want = "data/" + key
		}
		if mounted[key] != want {
			t.Errorf("ConfigMap key %s is mounted at %q, want %q", key, mounted[key], want)
		}
	}
	if len(mounted) != len(cm.Data) {
		t.Errorf("the volume maps %d keys, the ConfigMap has %d", len(mounted), len(cm.Data))
	}
	if flags["policy-data"]+".json" != dataKey(cm) {
		t.Errorf("--policy-data=%s but the ConfigMap's data file is %s", flags["policy-data"], dataKey(cm))
	}
}

func dataKey(cm *corev1.ConfigMap) string {
	for k := range cm.Data {
		if strings.HasSuffix(k, ".json") {
			return k
		}
	}
	return ""
}

// seconds reads a Go duration's whole seconds ("30s").
func seconds(d string) (int, error) {
	var n int
	_, err := fmt.Sscanf(d, "%ds", &n)
	return n, err
}

// proxyFlags runs the real binary's usage text.
func proxyFlags(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "run", "./cmd/mrtr-wasm", "proxy", "-h")
	cmd.Dir = ".."
	out, _ := cmd.CombinedOutput() // -h exits 2 after the usage
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		known[m[1]] = true
	}
	if !known["upstream"] || !known["ledger"] {
		t.Fatalf("could not read the proxy's flags from its usage:\n%s", out)
	}
	return known
}

// TestPolicyConfigMap holds the ConfigMap to the shipped policies: it is
// generated from ../policies (its .rego files without tests, and the
// proxy's data file), so it cannot drift. go test -run PolicyConfigMap
// -update rewrites it.
func TestPolicyConfigMap(t *testing.T) {
	want, data := policyConfigMap(t)
	const path = "kubernetes/policy-configmap.yaml"
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what ../policies gives: run go test -run PolicyConfigMap -update in deploy/", path)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(got, &cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if cm.Data[k] != v {
			t.Errorf("%s decodes to another %s than the policy's file", path, k)
		}
	}
}

func policyConfigMap(t *testing.T) ([]byte, map[string]string) {
	t.Helper()
	data := map[string]string{}
	files, _ := filepath.Glob("../policies/*.rego")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.rego") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[filepath.Base(f)] = string(b)
	}
	j, err := os.ReadFile("../policies/data/proxy.json")
	if err != nil {
		t.Fatal(err)
	}
	data["proxy.json"] = string(j)
	// Marshalled by hand with block scalars, so that the policy reads as
	// Rego in review; the strict decode above checks the result.
	var b strings.Builder
	b.WriteString("# Generated from ../../policies by deploy's TestPolicyConfigMap (-update): do not edit.\n")
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mrtr-policy\n  labels:\n    app.kubernetes.io/name: mrtr-proxy\ndata:\n")
	for _, k := range slices.Sorted(maps.Keys(data)) {
		fmt.Fprintf(&b, "  %s: |\n", k)
		for _, l := range strings.Split(strings.TrimRight(data[k], "\n"), "\n") {
			if l == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("    " + l + "\n")
		}
	}
	return []byte(b.String()), data
}

// TestImageBuilds builds deploy/Containerfile where a container engine
// answers, and checks the image runs as non-root.
func TestImageBuilds(t *testing.T) {
	engine := ""
	for _, e := range []string{"podman", "docker"} {
		if _, err := exec.LookPath(e); err == nil && exec.Command(e, "info").Run() == nil {
			engine = e
			break
		}
	}
	if engine == "" {
		t.Skip("no podman or docker that answers here: the image is not built")
	}
	build := exec.Command(engine, "build", "-f", "deploy/Containerfile", "-t", "mrtr-wasm:test", ".")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s build: %v\n%s", engine, err, out)
	}
	out, err := exec.Command(engine, "image", "inspect", "--format", "{{.Config.User}}", "mrtr-wasm:test").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.HasPrefix(strings.TrimSpace(string(out)), "0") {
		t.Errorf("image user %q (%v): want a non-root uid", out, err)
	}
}
