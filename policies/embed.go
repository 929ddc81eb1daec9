package policies

import (
	"embed"
	"io/fs"
)

//go:embed *.rego data/*.json data.schema.json
var files embed.FS

// FS is the policy directory: the .rego files and their _test.rego
// files at the top, data.schema.json, and the data files in data/.
var FS fs.FS = files
