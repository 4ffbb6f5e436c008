// Command cel-oracle answers versa-cel's environment cases with Kubernetes' own CEL
// environment: the base environment of k8s.io/apiserver at compatibility version 1.36, extended
// with `self` and `oldSelf` as apiextensions-apiserver declares them for a CRD schema node.
//
// A case file holds one case per line, in YAML flow style:
//
//	- {expr: "'abc'.size()", schema: {type: string}, self: "x", expect: 3, cost: 2, estimated: 2}
//
// `schema` (default `{type: string}`) and `self` (default `""`) give the rule's node and its
// value. The answer is the result as JSON (`expect`; CEL values JSON cannot hold are written as
// versa-cel displays them, e.g. `duration("1s")`), the runtime error (`error`) or the
// compile or program error (`compile_error`), the runtime cost of a successful evaluation
// (`cost`) and the maximum of the static estimate (`estimated`). A case may carry `differs`,
// a sentence on why versa answers otherwise; the oracle keeps it.
//
// Usage:
//
//	cel-oracle -check FILE   exit 1 and list the cases whose answers are not kube's
//	cel-oracle -fill FILE    rewrite FILE with kube's answers (comments and order kept)
//
// The program is versa's own; nothing of Kubernetes is copied here, it is imported.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	crdcel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	"sigs.k8s.io/yaml"
)

// compatibilityVersion is versa-cel's COMPATIBILITY_VERSION.
var compatibilityVersion = version.MajorMinor(1, 36)

// kase is one line of a case file.
type kase struct {
	Expr         string          `json:"expr"`
	Schema       json.RawMessage `json:"schema,omitempty"`
	Self         json.RawMessage `json:"self,omitempty"`
	Expect       json.RawMessage `json:"expect,omitempty"`
	Error        *string         `json:"error,omitempty"`
	CompileError *string         `json:"compile_error,omitempty"`
	Cost         *uint64         `json:"cost,omitempty"`
	Estimated    *uint64         `json:"estimated,omitempty"`
	Differs      string          `json:"differs,omitempty"`
}

func main() {
	check := flag.Bool("check", false, "report cases whose answers are not kube's")
	fill := flag.Bool("fill", false, "rewrite the file with kube's answers")
	flag.Parse()
	if flag.NArg() != 1 || *check == *fill {
		fmt.Fprintln(os.Stderr, "usage: cel-oracle -check|-fill FILE")
		os.Exit(2)
	}
	path := flag.Arg(0)
	text, err := os.ReadFile(path)
	if err != nil {
		fatal(err)
	}
	var out bytes.Buffer
	mismatches, cases := 0, 0
	for n, line := range strings.SplitAfter(string(text), "\n") {
		body, ok := strings.CutPrefix(line, "- {")
		if !ok {
			out.WriteString(line)
			continue
		}
		cases++
		var c kase
		if err := yaml.Unmarshal([]byte("{"+body), &c); err != nil {
			fatal(fmt.Errorf("%s:%d: %w", path, n+1, err))
		}
		kube := answer(c)
		kube.Expr, kube.Schema, kube.Self, kube.Differs = c.Expr, c.Schema, c.Self, c.Differs
		if !same(c, kube) {
			mismatches++
			if *check {
				fmt.Printf("%s:%d: not kube's answer\n  case: %s  kube: %s\n", path, n+1, strings.TrimSpace(line), render(kube))
			}
		}
		out.WriteString(render(kube))
		out.WriteString("\n")
	}
	if *fill {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			fatal(err)
		}
		fmt.Printf("%s: %d cases, %d answers changed\n", path, cases, mismatches)
		return
	}
	fmt.Printf("%s: %d cases, %d not kube's answer\n", path, cases, mismatches)
	if mismatches > 0 {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "cel-oracle:", err)
	os.Exit(2)
}

// answer compiles, estimates and evaluates a case as kube-apiserver 1.36 does.
func answer(c kase) kase {
	var kube kase
	fail := func(s string) kase { kube.CompileError = &s; return kube }
	schemaJSON := []byte(`{"type": "string"}`)
	if c.Schema != nil {
		schemaJSON = c.Schema
	}
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(schemaJSON, &v1); err != nil {
		return fail("oracle: schema: " + err.Error())
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return fail("oracle: schema: " + err.Error())
	}
	structural, err := schema.NewStructural(&internal)
	if err != nil {
		return fail("oracle: schema: " + err.Error())
	}
	decl := model.SchemaDeclType(structural, false).MaybeAssignTypeName("selfType")
	envSet, err := environment.MustBaseEnvSet(compatibilityVersion).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable("self", decl.CelType()),
			cel.Variable("oldSelf", decl.CelType()),
		},
		DeclTypes: []*apiservercel.DeclType{decl},
	})
	if err != nil {
		return fail("oracle: environment: " + err.Error())
	}
	env, err := envSet.Env(environment.NewExpressions)
	if err != nil {
		return fail("oracle: environment: " + err.Error())
	}
	ast, issues := env.Compile(c.Expr)
	if issues.Err() != nil {
		return fail("compilation failed: " + issues.String())
	}
	estimator := &library.CostEstimator{SizeEstimator: &sizes{root: decl}}
	if est, err := env.EstimateCost(ast, estimator); err == nil {
		kube.Estimated = &est.Max
	}
	prog, err := env.Program(ast, cel.CostLimit(celconfig.PerCallLimit), cel.CostTracking(estimator))
	if err != nil {
		return fail("program instantiation failed: " + err.Error())
	}
	selfJSON := []byte(`""`)
	if c.Self != nil {
		selfJSON = c.Self
	}
	var self any
	if err := utiljson.Unmarshal(selfJSON, &self); err != nil {
		return fail("oracle: self: " + err.Error())
	}
	result, details, err := prog.Eval(map[string]any{"self": crdcel.UnstructuredToVal(self, structural)})
	if err != nil {
		s := err.Error()
		kube.Error = &s
		return kube
	}
	kube.Expect = toJSON(result)
	if details != nil && details.ActualCost() != nil {
		cost := *details.ActualCost()
		kube.Cost = &cost
	}
	return kube
}

// sizes is the size estimator apiextensions-apiserver gives the cost estimator: a field path
// from `self` is bounded by the maxItems, maxProperties or maxLength its schema declares.
type sizes struct{ root *apiservercel.DeclType }

func (s *sizes) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	path := node.Path()
	if len(path) == 0 {
		return nil
	}
	at := s.root
	for _, step := range path[1:] {
		switch step {
		case "@items", "@values":
			at = at.ElemType
		case "@keys":
			at = at.KeyType
		default:
			f, ok := at.Fields[step]
			if !ok {
				return nil
			}
			at = f.Type
		}
		if at == nil {
			return nil
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: uint64(at.MaxElements)}
}

func (s *sizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// toJSON writes a result as JSON; values JSON cannot hold become their versa-cel display.
func toJSON(v ref.Val) json.RawMessage {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, v ref.Val) {
	switch x := v.(type) {
	case types.Null:
		b.WriteString("null")
	case types.Bool, types.Int, types.Uint:
		fmt.Fprintf(b, "%v", x.Value())
	case types.Double:
		b.WriteString(formatDouble(float64(x)))
	case types.String:
		b.Write(quoteJSON(string(x)))
	case traits.Mapper:
		type entry struct {
			key string
			val ref.Val
		}
		var entries []entry
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			key := display(k)
			if s, ok := k.(types.String); ok {
				key = string(s)
			}
			entries = append(entries, entry{key, x.Get(k)})
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].key < entries[j].key })
		b.WriteString("{")
		for i, e := range entries {
			if i > 0 {
				b.WriteString(", ")
			}
			b.Write(quoteJSON(e.key))
			b.WriteString(": ")
			writeJSON(b, e.val)
		}
		b.WriteString("}")
	case traits.Lister:
		b.WriteString("[")
		it := x.Iterator()
		for i := 0; it.HasNext() == types.True; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, it.Next())
		}
		b.WriteString("]")
	default:
		b.Write(quoteJSON(display(v)))
	}
}

// display is versa-cel's `Display` of a value.
func display(v ref.Val) string {
	switch x := v.(type) {
	case types.Null:
		return "null"
	case types.Bool, types.Int:
		return fmt.Sprintf("%v", x.Value())
	case types.Uint:
		return fmt.Sprintf("%du", uint64(x))
	case types.Double:
		return strconv.FormatFloat(float64(x), 'g', -1, 64)
	case types.String:
		return strconv.Quote(string(x))
	case types.Bytes:
		return "b" + strconv.Quote(string(x))
	case types.Duration:
		return fmt.Sprintf("duration(%q)", x.ConvertToType(types.StringType).Value())
	case types.Timestamp:
		return fmt.Sprintf("timestamp(%q)", x.ConvertToType(types.StringType).Value())
	case *types.Optional:
		if !x.HasValue() {
			return "optional.none()"
		}
		return "optional.of(" + display(x.GetValue()) + ")"
	case ref.Type:
		return x.TypeName()
	case apiservercel.IP:
		return fmt.Sprintf("ip(%q)", x.Addr.String())
	case apiservercel.CIDR:
		return fmt.Sprintf("cidr(%q)", x.Prefix.String())
	case apiservercel.URL:
		return fmt.Sprintf("url(%q)", x.URL.String())
	case apiservercel.Quantity:
		return fmt.Sprintf("quantity(%q)", x.Quantity.String())
	case apiservercel.Semver:
		return fmt.Sprintf("semver(%q)", x.Version.String())
	case apiservercel.Format:
		return fmt.Sprintf("format.%s()", x.Name)
	case traits.Mapper:
		return fmt.Sprintf("map(size %v)", x.Size())
	case traits.Lister:
		return fmt.Sprintf("list(size %v)", x.Size())
	}
	return fmt.Sprintf("%v", v.Value())
}

// formatDouble writes a double so that it reads back as one (`1.0`, not `1`).
func formatDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}

func quoteJSON(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// same reports whether a case states kube's answer (numbers compared as numbers).
func same(c, kube kase) bool {
	return equalJSON(c.Expect, kube.Expect) && equalPtr(c.Error, kube.Error) &&
		equalPtr(c.CompileError, kube.CompileError) && equalPtr(c.Cost, kube.Cost) &&
		equalPtr(c.Estimated, kube.Estimated)
}

func equalJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// render writes a case as one line of flow YAML (JSON values are YAML).
func render(c kase) string {
	var parts []string
	add := func(key string, raw []byte) { parts = append(parts, key+": "+string(raw)) }
	add("expr", quoteJSON(c.Expr))
	if c.Schema != nil {
		add("schema", compact(c.Schema))
	}
	if c.Self != nil {
		add("self", compact(c.Self))
	}
	switch {
	case c.CompileError != nil:
		add("compile_error", quoteJSON(*c.CompileError))
	case c.Error != nil:
		add("error", quoteJSON(*c.Error))
	default:
		add("expect", c.Expect)
	}
	if c.Cost != nil {
		add("cost", []byte(strconv.FormatUint(*c.Cost, 10)))
	}
	if c.Estimated != nil {
		add("estimated", []byte(strconv.FormatUint(*c.Estimated, 10)))
	}
	if c.Differs != "" {
		add("differs", quoteJSON(c.Differs))
	}
	return "- {" + strings.Join(parts, ", ") + "}"
}

func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	// Flow YAML wants a space after ':' and ','; JSON does not care.
	var out bytes.Buffer
	inString, escaped := false, false
	for _, ch := range b.Bytes() {
		out.WriteByte(ch)
		switch {
		case escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case ch == '"':
			inString = !inString
		case !inString && (ch == ':' || ch == ','):
			out.WriteByte(' ')
		}
	}
	return out.Bytes()
}
