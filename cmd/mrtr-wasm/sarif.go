package main

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// SARIF 2.1.0 (OASIS), the subset code scanning reads: one run, a rule
// per finding code, results with a file and line.
// The tests validate against the SARIF 2.1.0 schema from npm (lint_test.go).

const sarifSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	Properties map[string]any `json:"properties,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifMessage    `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation struct {
		URI string `json:"uri"`
	} `json:"artifactLocation"`
	Region *sarifRegion `json:"region,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

// ruleText describes each code for the rules list; codes not listed are
// described by their first message.
var ruleText = map[string]string{
	host.CodeFormSecretField:       "A form field asks for a secret (password, API key, token, card number...): use URL mode",
	"mrtr.form.not_flat":           "A form schema must be a flat object of primitive properties",
	"mrtr.form.unsupported_type":   "A form property has a type the form subset does not allow",
	"mrtr.url.not_https":           "A URL-mode request must use https (http only for localhost)",
	"policy.field_not_allowed":     "The policy does not allow this tool to ask for this field",
	"policy.class_forbidden":       "The field is in a data class this deployment forbids",
	"policy.kind_not_allowed":      "The policy does not allow this tool this input kind or mode",
	"policy.url_host_not_allowed":  "The policy does not allow this tool to send users to this host",
	"policy.url_path_not_allowed":  "The policy does not allow this tool to send users to this path",
	"policy.url_invalid":           "The policy cannot read the URL",
	"policy.rounds_out_of_bounds":  "The round limit is outside the deployment's bounds",
	"policy.ttl_out_of_bounds":     "The state TTL is outside the deployment's bounds",
	"policy.config_missing":        "The policy has no usable data",
	"policy.input_malformed":       "The policy input is not shaped as documented",
	"policy.undecided":             "The policy could not decide, so it refuses",
	"policy.rule_unused":           "A policy rule names a tool no linted file declares",
	"mrtr.input.deprecated":        "Sampling and roots are deprecated in MCP 2026-07-28",
	"mrtr.form.legacy_enum_names":  "enumNames is a legacy, non-standard enum form",
	"mrtr.request.missing_message": "An elicitation needs a message",
}

func writeSARIF(w io.Writer, fs []finding) error {
	byCode := map[string]*sarifRule{}
	var codes []string
	for _, f := range fs {
		if _, ok := byCode[f.Code]; ok {
			continue
		}
		text := ruleText[f.Code]
		if text == "" {
			text = f.Message
		}
		r := &sarifRule{ID: f.Code, ShortDescription: sarifMessage{Text: text}}
		r.DefaultConfiguration.Level = sarifLevel(f.Severity)
		if strings.HasPrefix(f.Code, "policy.") {
			r.Properties = map[string]any{"tags": []string{"policy"}}
		} else {
			r.Properties = map[string]any{"tags": []string{"mcp", "elicitation"}}
		}
		byCode[f.Code] = r
		codes = append(codes, f.Code)
	}
	sort.Strings(codes)
	index := map[string]int{}
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "mrtr-wasm", InformationURI: "https://github.com/mrtr-wasm/mrtr-wasm", Rules: []sarifRule{}}}, Results: []sarifResult{}}
	for i, c := range codes {
		index[c] = i
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, *byCode[c])
	}
	for _, f := range fs {
		var loc sarifLocation
		loc.PhysicalLocation.ArtifactLocation.URI = artifactURI(f.File)
		if f.Line > 0 {
			loc.PhysicalLocation.Region = &sarifRegion{StartLine: f.Line}
		}
		props := map[string]any{}
		for k, v := range map[string]string{"tool": f.Tool, "key": f.Key, "field": f.Field, "rule": f.Rule} {
			if v != "" {
				props[k] = v
			}
		}
		res := sarifResult{
			RuleID: f.Code, RuleIndex: index[f.Code], Level: sarifLevel(f.Severity),
			Message: sarifMessage{Text: f.Message}, Locations: []sarifLocation{loc},
		}
		if len(props) > 0 {
			res.Properties = props
		}
		run.Results = append(run.Results, res)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sarifLog{Schema: sarifSchema, Version: "2.1.0", Runs: []sarifRun{run}}); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func sarifLevel(severity string) string {
	if severity == host.SeverityError {
		return "error"
	}
	return "warning"
}
