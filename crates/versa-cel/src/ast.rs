//! The CEL abstract syntax tree, shaped like cel-go's (`common/ast`) so that the checker, the
//! cost estimator and the evaluator can follow cel-go's algorithms node for node.
//!
//! Every node has an [`ExprId`], unique within one parse; [`SourceInfo`] maps ids to byte
//! offsets in the source so that errors can carry cel-go's `<input>:line:column` locations.
//! Operators are calls to functions with cel-go's internal names (`_+_`, `_[_]`, `@in`, ...),
//! and macros are already expanded: `has(a.b)` is a test-only [`ExprKind::Select`], the list
//! macros are [`Comprehension`]s.

/// Identifies an expression node within one parsed expression.
pub type ExprId = u32;

/// A node of the expression tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub id: ExprId,
    pub kind: ExprKind,
}

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
}

/// The kinds of expression nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Literal(Literal),
    /// A (possibly dot-qualified, for `.a`) identifier.
    Ident(String),
    /// `operand.field`; `test_only` for the expansion of `has(operand.field)`.
    Select {
        operand: Box<Expr>,
        field: String,
        test_only: bool,
    },
    /// A function call; `target` is the receiver of a member call (`target.f(args)`).
    Call {
        function: String,
        target: Option<Box<Expr>>,
        args: Vec<Expr>,
    },
    /// `[a, ?b]`: `optional_indices` lists the elements written with `?`.
    List {
        elements: Vec<Expr>,
        optional_indices: Vec<usize>,
    },
    /// `{k: v, ?k2: v2}`.
    Map {
        entries: Vec<MapEntry>,
    },
    /// `Name{field: value}`: message construction. Nothing in Kubernetes declares message
    /// types, so the checker rejects these, but they parse.
    Struct {
        type_name: String,
        fields: Vec<StructField>,
    },
    /// The expansion of a macro.
    Comprehension(Box<Comprehension>),
}

/// One `key: value` entry of a map literal.
#[derive(Clone, Debug, PartialEq)]
pub struct MapEntry {
    pub id: ExprId,
    pub key: Expr,
    pub value: Expr,
    pub optional: bool,
}

/// One `field: value` initializer of a message literal.
#[derive(Clone, Debug, PartialEq)]
pub struct StructField {
    pub id: ExprId,
    pub field: String,
    pub value: Expr,
    pub optional: bool,
}

/// cel-go's comprehension: a fold over `iter_range` binding `iter_var`, with the accumulator
/// `accu_var` starting at `accu_init`, stepping with `loop_step` while `loop_condition` holds,
/// and producing `result`.
///
/// A two-variable comprehension (`l.all(i, v, ...)`, `m.transformMap(k, v, ...)`) also binds
/// `iter_var2`: over a list `iter_var` is the index and `iter_var2` the element, over a map
/// `iter_var` is the key and `iter_var2` its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub iter_var: String,
    pub iter_var2: Option<String>,
    pub iter_range: Expr,
    pub accu_var: String,
    pub accu_init: Expr,
    pub loop_condition: Expr,
    pub loop_step: Expr,
    pub result: Expr,
}

/// The accumulator variable name cel-go's macros use.
pub const ACCUMULATOR_VAR: &str = "@result";
/// cel-go's former accumulator name, still refused as a two-variable iteration variable.
pub const LEGACY_ACCUMULATOR_VAR: &str = "__result__";
/// The function two-variable `transformMap`/`transformMapEntry` steps call to add entries to
/// their accumulator (cel-go's `cel.@mapInsert`; `@` keeps it out of reach of source text).
pub const MAP_INSERT: &str = "cel.@mapInsert";

/// Operator function names, as cel-go spells them.
pub mod op {
    pub const CONDITIONAL: &str = "_?_:_";
    pub const LOGICAL_AND: &str = "_&&_";
    pub const LOGICAL_OR: &str = "_||_";
    pub const LOGICAL_NOT: &str = "!_";
    pub const EQUALS: &str = "_==_";
    pub const NOT_EQUALS: &str = "_!=_";
    pub const LESS: &str = "_<_";
    pub const LESS_EQUALS: &str = "_<=_";
    pub const GREATER: &str = "_>_";
    pub const GREATER_EQUALS: &str = "_>=_";
    pub const ADD: &str = "_+_";
    pub const SUBTRACT: &str = "_-_";
    pub const MULTIPLY: &str = "_*_";
    pub const DIVIDE: &str = "_/_";
    pub const MODULO: &str = "_%_";
    pub const NEGATE: &str = "-_";
    pub const INDEX: &str = "_[_]";
    pub const OPT_INDEX: &str = "_[?_]";
    pub const OPT_SELECT: &str = "_?._";
    pub const IN: &str = "@in";
    pub const NOT_STRICTLY_FALSE: &str = "@not_strictly_false";
}

/// Where each node starts in the source, for error locations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceInfo {
    /// Byte offset of node `id` at index `id`.
    offsets: Vec<u32>,
    /// Byte offsets at which lines 2, 3, ... start.
    line_starts: Vec<u32>,
}

/// A 1-based line and 0-based column (in code points), cel-go's `common.Location`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub line: u32,
    pub column: u32,
}

impl SourceInfo {
    pub(crate) fn new(source: &str) -> SourceInfo {
        let line_starts = source.char_indices().filter(|&(_, c)| c == '\n').map(|(i, _)| (i + 1) as u32).collect();
        SourceInfo { offsets: Vec::new(), line_starts }
    }

    /// Registers a new node starting at `offset` and returns its id (ids start at 1, as in
    /// cel-go, so that 0 can mean "no node").
    pub(crate) fn next_id(&mut self, offset: usize) -> ExprId {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.offsets.push(offset as u32);
        (self.offsets.len() - 1) as ExprId
    }

    /// The byte offset where node `id` starts.
    pub fn offset(&self, id: ExprId) -> Option<usize> {
        self.offsets.get(id as usize).map(|&o| o as usize)
    }

    /// The line and column of a byte offset in `source`.
    pub fn location_of_offset(&self, source: &str, offset: usize) -> Location {
        let line_idx = self.line_starts.partition_point(|&s| (s as usize) <= offset);
        let line_start = if line_idx == 0 { 0 } else { self.line_starts[line_idx - 1] as usize };
        let column = source.get(line_start..offset).map_or(0, |s| s.chars().count());
        Location { line: line_idx as u32 + 1, column: column as u32 }
    }

    /// The location of node `id` in `source`.
    pub fn location(&self, source: &str, id: ExprId) -> Location {
        self.location_of_offset(source, self.offset(id).unwrap_or(0))
    }

    /// The number of ids handed out so far (the largest id + 1).
    pub fn id_count(&self) -> usize {
        self.offsets.len()
    }
}

impl Expr {
    /// Calls `f` on this node and every node below it, parents first.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        self.walk_pruned(&mut |e| {
            f(e);
            true
        });
    }

    /// Like [`Expr::walk`], but the nodes below a node for which `f` returns `false` are skipped.
    pub fn walk_pruned(&self, f: &mut dyn FnMut(&Expr) -> bool) {
        if !f(self) {
            return;
        }
        match &self.kind {
            ExprKind::Literal(_) | ExprKind::Ident(_) => {}
            ExprKind::Select { operand, .. } => operand.walk_pruned(f),
            ExprKind::Call { target, args, .. } => {
                if let Some(t) = target {
                    t.walk_pruned(f);
                }
                for a in args {
                    a.walk_pruned(f);
                }
            }
            ExprKind::List { elements, .. } => elements.iter().for_each(|e| e.walk_pruned(f)),
            ExprKind::Map { entries } => {
                for e in entries {
                    e.key.walk_pruned(f);
                    e.value.walk_pruned(f);
                }
            }
            ExprKind::Struct { fields, .. } => fields.iter().for_each(|e| e.value.walk_pruned(f)),
            ExprKind::Comprehension(c) => {
                c.iter_range.walk_pruned(f);
                c.accu_init.walk_pruned(f);
                c.loop_condition.walk_pruned(f);
                c.loop_step.walk_pruned(f);
                c.result.walk_pruned(f);
            }
        }
    }
}
