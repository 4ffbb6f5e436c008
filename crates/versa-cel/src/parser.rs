//! The CEL parser: a hand-written recursive-descent parser for the grammar of cel-spec
//! `doc/langdef.md`, with macro expansion and the optional-value syntax (`.?f`, `[?i]`,
//! `[?e]`, `{?k: v}`).
//!
//! Precedence, loosest first: `?:` (right-associative), `||`, `&&`, relations
//! (`< <= >= > == != in`), `+ -`, `* / %`, unary `! -`, then member access, indexing and calls.
//! The macros are cel-go's standard ones (`has`, `all`, `exists`, `exists_one`, `map`,
//! `filter`) and those of the extensions Kubernetes enables: `sortBy`,
//! `optMap`/`optFlatMap`, and the two-variable comprehensions (`all(i, v, p)`, `exists`,
//! `existsOne`/`exists_one`, `transformList`, `transformMap`, `transformMapEntry`).
//! Like cel-go, `&&` and `||` chains are built as balanced trees, repeated `!`/`-` collapse
//! when their count is even, and a `-` directly before a number literal is part of the literal
//! (so `-9223372036854775808` is an int).
//!
//! # Input safety
//!
//! Recursion happens only through `Parser::expr`, and its depth is limited to
//! [`MAX_RECURSION_DEPTH`] (cel-go's default, with cel-go's message). Independently, every node's
//! height in the tree is limited to [`MAX_AST_HEIGHT`], so long left-associative chains such as
//! `1+1+...+1` cannot build a tree too deep for the checker or the evaluator to walk. Expressions
//! longer than [`MAX_CODE_POINTS`] are refused before lexing.

use crate::ast::{
    ACCUMULATOR_VAR, Comprehension, Expr, ExprId, ExprKind, LEGACY_ACCUMULATOR_VAR, Literal, MAP_INSERT, MapEntry,
    SourceInfo, StructField, op,
};
use crate::error::CompileError;
use crate::lexer::{Tok, Token, lex};

/// cel-go's default parser recursion limit (`parser.MaxRecursionDepth`).
pub const MAX_RECURSION_DEPTH: usize = 250;
/// cel-go's default expression size limit (`parser.ExpressionSizeCodePointLimit`).
pub const MAX_CODE_POINTS: usize = 100_000;
/// versa's bound on the height of the expression tree (see the module docs). Parsing and
/// checking the deepest accepted input fits a 2 MiB thread stack even in unoptimized builds.
pub const MAX_AST_HEIGHT: u32 = 500;

/// Identifiers that CEL reserves and that may not name variables or functions.
const RESERVED_IDS: &[&str] = &[
    "as",
    "break",
    "const",
    "continue",
    "else",
    "false",
    "for",
    "function",
    "if",
    "import",
    "in",
    "let",
    "loop",
    "package",
    "namespace",
    "null",
    "return",
    "true",
    "var",
    "void",
    "while",
];

/// A parsed expression: the tree and where each node starts.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedExpr {
    pub expr: Expr,
    pub source_info: SourceInfo,
}

/// Parses a CEL expression. On failure returns every error found (cel-go reports several, and so
/// do we where recovery is simple; parsing stops at the first syntax error).
pub fn parse(source: &str) -> Result<ParsedExpr, Vec<CompileError>> {
    let info = SourceInfo::new(source);
    let code_points = source.chars().count();
    if code_points > MAX_CODE_POINTS {
        let loc = info.location_of_offset(source, 0);
        return Err(vec![CompileError::new(
            loc,
            format!("expression code point size exceeds limit: size: {code_points}, limit {MAX_CODE_POINTS}"),
        )]);
    }
    let locate = |off: usize| info.location_of_offset(source, off);
    let tokens = lex(source, &locate).map_err(|e| vec![e])?;
    let mut p =
        Parser { source, tokens, pos: 0, info: info.clone(), heights: Vec::new(), depth: 0, errors: Vec::new() };
    let result = p.expr();
    let result = result
        .and_then(|e| if p.peek() == &Tok::Eof { Ok(e) } else { Err(p.unexpected(&format_expected(&["<EOF>"]))) });
    match result {
        Ok(expr) if p.errors.is_empty() => Ok(ParsedExpr { expr, source_info: p.info }),
        Ok(_) => Err(p.errors),
        Err(e) => {
            let mut errors = p.errors;
            errors.push(e);
            Err(errors)
        }
    }
}

fn format_expected(alternatives: &[&str]) -> String {
    if alternatives.len() == 1 {
        format!("'{}'", alternatives[0])
    } else {
        let quoted: Vec<String> = alternatives.iter().map(|a| format!("'{a}'")).collect();
        format!("{{{}}}", quoted.join(", "))
    }
}

type PResult<T> = Result<T, CompileError>;

struct Parser<'a> {
    source: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    info: SourceInfo,
    /// Height of each node by id (leaves are 1).
    heights: Vec<u32>,
    depth: usize,
    /// Non-fatal errors (bad literals, bad macro arguments) that let parsing continue.
    errors: Vec<CompileError>,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        self.tokens.get(self.pos).map_or(&Tok::Eof, |t| &t.tok)
    }

    fn peek_at(&self, n: usize) -> &Tok {
        self.tokens.get(self.pos + n).map_or(&Tok::Eof, |t| &t.tok)
    }

    fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.source.len(), |t| t.offset)
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens.get(self.pos).cloned().unwrap_or(Token { tok: Tok::Eof, offset: self.source.len() });
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn error_at(&self, offset: usize, msg: impl Into<String>) -> CompileError {
        CompileError::new(self.info.location_of_offset(self.source, offset), msg)
    }

    fn unexpected(&self, expecting: &str) -> CompileError {
        let t = self.peek().describe();
        let what = if self.peek() == &Tok::Eof { "mismatched input" } else { "extraneous input" };
        self.error_at(self.offset(), format!("Syntax error: {what} '{t}' expecting {expecting}"))
    }

    /// A backtick-quoted field name where one may stand: Kubernetes' environment does not enable
    /// cel-go's `EnableIdentifierEscapeSyntax`.
    fn escaped_ident_error(&self) -> CompileError {
        self.error_at(self.offset(), "unsupported syntax: '`'")
    }

    fn expect(&mut self, tok: &Tok) -> PResult<Token> {
        if self.peek() == tok { Ok(self.bump()) } else { Err(self.unexpected(&format_expected(&[&tok.describe()]))) }
    }

    /// Creates a node at `offset` whose children are `children`, enforcing the height bound.
    fn node(&mut self, offset: usize, kind: ExprKind, children: &[ExprId]) -> PResult<Expr> {
        let height =
            1 + children.iter().map(|&c| self.heights.get(c as usize).copied().unwrap_or(1)).max().unwrap_or(0);
        if height > MAX_AST_HEIGHT {
            return Err(self.error_at(offset, format!("expression nesting exceeds limit: {MAX_AST_HEIGHT}")));
        }
        let id = self.info.next_id(offset);
        if self.heights.len() <= id as usize {
            self.heights.resize(id as usize + 1, 1);
        }
        self.heights[id as usize] = height;
        Ok(Expr { id, kind })
    }

    fn call(&mut self, offset: usize, function: &str, target: Option<Expr>, args: Vec<Expr>) -> PResult<Expr> {
        let mut children: Vec<ExprId> = args.iter().map(|a| a.id).collect();
        if let Some(t) = &target {
            children.push(t.id);
        }
        self.node(
            offset,
            ExprKind::Call { function: function.to_owned(), target: target.map(Box::new), args },
            &children,
        )
    }

    // expr: conditionalOr ('?' conditionalOr ':' expr)?
    fn expr(&mut self) -> PResult<Expr> {
        self.depth += 1;
        if self.depth > MAX_RECURSION_DEPTH {
            let off = self.offset();
            self.depth -= 1;
            return Err(
                self.error_at(off, format!("Syntax error: expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"))
            );
        }
        let r = self.conditional();
        self.depth -= 1;
        r
    }

    fn conditional(&mut self) -> PResult<Expr> {
        let cond = self.binary(0)?;
        if self.peek() != &Tok::Question {
            return Ok(cond);
        }
        self.ternary(cond)
    }

    #[inline(never)]
    fn ternary(&mut self, cond: Expr) -> PResult<Expr> {
        let q = self.bump();
        let then = self.binary(0)?;
        self.expect(&Tok::Colon)?;
        let otherwise = self.expr()?;
        self.call(q.offset, op::CONDITIONAL, None, vec![cond, then, otherwise])
    }

    /// Precedence climbing over the binary operators with precedence at least `min`: one
    /// stack frame per nesting level instead of one per precedence level, which keeps deep
    /// parenthesized input cheap on the stack.
    fn binary(&mut self, min: u8) -> PResult<Expr> {
        let mut left = self.unary()?;
        loop {
            let Some((prec, function)) = binary_op(self.peek()) else {
                return Ok(left);
            };
            if prec < min {
                return Ok(left);
            }
            if function == op::LOGICAL_OR || function == op::LOGICAL_AND {
                left = self.logical_chain(left, prec, function)?;
                continue;
            }
            let at = self.bump().offset;
            let right = self.binary(prec + 1)?;
            left = self.call(at, function, None, vec![left, right])?;
        }
    }

    /// A chain of one logical operator, built as a balanced tree like cel-go's `newBalancer`.
    #[inline(never)]
    fn logical_chain(&mut self, first: Expr, prec: u8, function: &'static str) -> PResult<Expr> {
        let mut terms = vec![Some(first)];
        let mut ops = Vec::new();
        while binary_op(self.peek()).is_some_and(|(_, f)| f == function) {
            ops.push(self.bump().offset);
            terms.push(Some(self.binary(prec + 1)?));
        }
        self.balance(function, &mut terms, &ops, 0, ops.len() - 1)
    }

    fn balance(
        &mut self,
        function: &str,
        terms: &mut [Option<Expr>],
        ops: &[usize],
        lo: usize,
        hi: usize,
    ) -> PResult<Expr> {
        let mid = (lo + hi).div_ceil(2);
        let left = if mid == lo { terms[mid].take() } else { Some(self.balance(function, terms, ops, lo, mid - 1)?) };
        let right =
            if mid == hi { terms[mid + 1].take() } else { Some(self.balance(function, terms, ops, mid + 1, hi)?) };
        match (left, right) {
            (Some(l), Some(r)) => self.call(ops[mid], function, None, vec![l, r]),
            _ => Err(self.error_at(ops[mid], "Syntax error: internal: unbalanced logical operator chain")),
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Bang => self.unary_ops(Tok::Bang, op::LOGICAL_NOT),
            // `-` directly before a number is the literal's sign (cel-go's `literal` rule).
            Tok::Minus if !matches!(self.peek_at(1), Tok::Int(_) | Tok::Double(_)) => {
                self.unary_ops(Tok::Minus, op::NEGATE)
            }
            _ => self.member(),
        }
    }

    #[inline(never)]
    fn unary_ops(&mut self, tok: Tok, function: &str) -> PResult<Expr> {
        let mut offsets = Vec::new();
        while self.peek() == &tok {
            if tok == Tok::Minus && matches!(self.peek_at(1), Tok::Int(_) | Tok::Double(_)) {
                break;
            }
            offsets.push(self.bump().offset);
        }
        let e = self.member()?;
        if offsets.len() % 2 == 0 {
            return Ok(e);
        }
        // An odd count applies once, at the first operator (cel-go drops pairs).
        self.call(offsets[0], function, None, vec![e])
    }

    fn member(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            e = match self.peek() {
                Tok::Dot => self.select_or_member_call(e)?,
                Tok::LBracket => self.index(e)?,
                _ => return Ok(e),
            };
        }
    }

    #[inline(never)]
    fn select_or_member_call(&mut self, e: Expr) -> PResult<Expr> {
        let dot = self.bump().offset;
        let optional = self.eat(&Tok::Question);
        let name_off = self.offset();
        let name = match self.peek() {
            Tok::Ident(name) => name.clone(),
            Tok::EscIdent(_) => return Err(self.escaped_ident_error()),
            _ => return Err(self.unexpected("IDENTIFIER")),
        };
        self.bump();
        if !optional && self.peek() == &Tok::LParen {
            let open = self.bump().offset;
            let args = self.args(&Tok::RParen)?;
            self.member_call_or_macro(open, name, e, args)
        } else if optional {
            let lit = self.node(name_off, ExprKind::Literal(Literal::String(name)), &[])?;
            self.call(dot, op::OPT_SELECT, None, vec![e, lit])
        } else {
            let id = e.id;
            self.node(dot, ExprKind::Select { operand: Box::new(e), field: name, test_only: false }, &[id])
        }
    }

    #[inline(never)]
    fn index(&mut self, e: Expr) -> PResult<Expr> {
        let open = self.bump().offset;
        let optional = self.eat(&Tok::Question);
        let index = self.expr()?;
        self.expect(&Tok::RBracket)?;
        let function = if optional { op::OPT_INDEX } else { op::INDEX };
        self.call(open, function, None, vec![e, index])
    }

    /// Comma-separated expressions up to `close` (consumed); a trailing comma is allowed only
    /// in list literals, as in the grammar.
    fn args(&mut self, close: &Tok) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(&Tok::Comma) {
                continue;
            }
            self.expect(close)?;
            return Ok(args);
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        if self.peek() == &Tok::LParen {
            self.bump();
            let e = self.expr()?;
            self.expect(&Tok::RParen)?;
            return Ok(e);
        }
        self.primary_other()
    }

    #[inline(never)]
    fn primary_other(&mut self) -> PResult<Expr> {
        let start = self.offset();
        match self.peek().clone() {
            Tok::Dot | Tok::Ident(_) => self.ident_or_call(),
            Tok::LBracket => self.list_literal(start),
            Tok::LBrace => self.map_literal(start),
            Tok::Minus => {
                self.bump();
                self.number_literal(start, true)
            }
            Tok::Int(_) | Tok::Uint(_) | Tok::Double(_) => self.number_literal(start, false),
            Tok::Str(s) => {
                self.bump();
                self.node(start, ExprKind::Literal(Literal::String(s)), &[])
            }
            Tok::Bytes(b) => {
                self.bump();
                self.node(start, ExprKind::Literal(Literal::Bytes(b)), &[])
            }
            Tok::True | Tok::False | Tok::Null => {
                let lit = match self.bump().tok {
                    Tok::True => Literal::Bool(true),
                    Tok::False => Literal::Bool(false),
                    _ => Literal::Null,
                };
                self.node(start, ExprKind::Literal(lit), &[])
            }
            _ => Err(self.unexpected(&format_expected(&["(", "[", "{", ".", "-", "!", "IDENTIFIER", "literal"]))),
        }
    }

    #[inline(never)]
    fn list_literal(&mut self, start: usize) -> PResult<Expr> {
        self.bump();
        let mut elements = Vec::new();
        let mut optional_indices = Vec::new();
        while self.peek() != &Tok::RBracket {
            if self.eat(&Tok::Question) {
                optional_indices.push(elements.len());
            }
            elements.push(self.expr()?);
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RBracket)?;
        let children: Vec<ExprId> = elements.iter().map(|e| e.id).collect();
        self.node(start, ExprKind::List { elements, optional_indices }, &children)
    }

    #[inline(never)]
    fn map_literal(&mut self, start: usize) -> PResult<Expr> {
        self.bump();
        let mut entries = Vec::new();
        let mut children = Vec::new();
        while self.peek() != &Tok::RBrace {
            let optional = self.eat(&Tok::Question);
            let key = self.expr()?;
            let colon = self.expect(&Tok::Colon)?.offset;
            let value = self.expr()?;
            children.push(key.id);
            children.push(value.id);
            let id = self.info.next_id(colon);
            entries.push(MapEntry { id, key, value, optional });
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RBrace)?;
        self.node(start, ExprKind::Map { entries }, &children)
    }

    fn number_literal(&mut self, start: usize, negative: bool) -> PResult<Expr> {
        let tok = self.bump().tok;
        let sign = if negative { "-" } else { "" };
        let lit = match tok {
            Tok::Int(text) => {
                let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                    Some(hex) => i64::from_str_radix(&format!("{sign}{hex}"), 16),
                    None => format!("{sign}{text}").parse::<i64>(),
                };
                match parsed {
                    Ok(v) => Literal::Int(v),
                    Err(_) => {
                        self.errors.push(self.error_at(start, "invalid int literal"));
                        Literal::Int(0)
                    }
                }
            }
            Tok::Uint(text) => {
                let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => text.parse::<u64>(),
                };
                match parsed {
                    Ok(v) => Literal::Uint(v),
                    Err(_) => {
                        self.errors.push(self.error_at(start, "invalid uint literal"));
                        Literal::Uint(0)
                    }
                }
            }
            Tok::Double(text) => match format!("{sign}{text}").parse::<f64>() {
                Ok(v) => Literal::Double(v),
                Err(_) => {
                    self.errors.push(self.error_at(start, "invalid double literal"));
                    Literal::Double(0.0)
                }
            },
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("literal"));
            }
        };
        self.node(start, ExprKind::Literal(lit), &[])
    }

    /// `'.'? IDENT ('(' args ')')?`, or a message literal `'.'? IDENT ('.' IDENT)* '{' ... '}'`.
    fn ident_or_call(&mut self) -> PResult<Expr> {
        let start = self.offset();
        let leading_dot = self.eat(&Tok::Dot);
        // Look ahead for a message literal: IDENT ('.' IDENT)* '{'.
        let mut n = 0;
        loop {
            if !matches!(self.peek_at(n), Tok::Ident(_)) {
                break;
            }
            if self.peek_at(n + 1) == &Tok::Dot && matches!(self.peek_at(n + 2), Tok::Ident(_)) {
                n += 2;
                continue;
            }
            if self.peek_at(n + 1) == &Tok::LBrace {
                return self.message_literal(start, leading_dot, n);
            }
            break;
        }
        let name_off = self.offset();
        let name = match self.bump().tok {
            Tok::Ident(n) => n,
            _ => {
                self.pos -= 1;
                return Err(self.unexpected("IDENTIFIER"));
            }
        };
        if RESERVED_IDS.contains(&name.as_str()) {
            return Err(self.error_at(name_off, format!("Syntax error: reserved identifier: {name}")));
        }
        let full = if leading_dot { format!(".{name}") } else { name };
        if self.peek() == &Tok::LParen {
            let open = self.bump().offset;
            let args = self.args(&Tok::RParen)?;
            return self.global_call_or_macro(open, full, args);
        }
        self.node(start, ExprKind::Ident(full), &[])
    }

    fn message_literal(&mut self, start: usize, leading_dot: bool, last: usize) -> PResult<Expr> {
        let mut name = if leading_dot { ".".to_owned() } else { String::new() };
        for i in 0..=last {
            let t = self.bump().tok;
            if i % 2 == 0 {
                if let Tok::Ident(s) = t {
                    name.push_str(&s);
                }
            } else {
                name.push('.');
            }
        }
        let open = self.expect(&Tok::LBrace)?.offset;
        let mut fields = Vec::new();
        let mut children = Vec::new();
        while self.peek() != &Tok::RBrace {
            let optional = self.eat(&Tok::Question);
            let field = match self.bump().tok {
                Tok::Ident(f) => f,
                Tok::EscIdent(_) => {
                    self.pos -= 1;
                    return Err(self.escaped_ident_error());
                }
                _ => {
                    self.pos -= 1;
                    return Err(self.unexpected("IDENTIFIER"));
                }
            };
            let colon = self.expect(&Tok::Colon)?.offset;
            let value = self.expr()?;
            children.push(value.id);
            let id = self.info.next_id(colon);
            fields.push(StructField { id, field, value, optional });
            if !self.eat(&Tok::Comma) {
                break;
            }
        }
        self.expect(&Tok::RBrace)?;
        let _ = start;
        self.node(open, ExprKind::Struct { type_name: name, fields }, &children)
    }

    fn global_call_or_macro(&mut self, open: usize, function: String, mut args: Vec<Expr>) -> PResult<Expr> {
        if function == "has" && args.len() == 1 {
            let arg = args.remove(0);
            return match arg.kind {
                ExprKind::Select { operand, field, test_only: false } => {
                    let id = operand.id;
                    self.node(open, ExprKind::Select { operand, field, test_only: true }, &[id])
                }
                _ => {
                    // cel-go reports the error and leaves an error node; we keep a placeholder
                    // so that parsing can go on and report further errors.
                    self.errors.push(self.error_at(open, "invalid argument to has() macro"));
                    self.node(open, ExprKind::Literal(Literal::Null), &[])
                }
            };
        }
        self.call(open, &function, None, args)
    }

    fn member_call_or_macro(
        &mut self,
        open: usize,
        function: String,
        target: Expr,
        mut args: Vec<Expr>,
    ) -> PResult<Expr> {
        // cel-go extension macros: sortBy (lists), optMap/optFlatMap (optionals). cel-go's
        // bindings (`cel.bind`) are not in Kubernetes 1.36's environment: `cel.bind(...)` is a
        // call of an undeclared `cel`, as kube answers.
        match (function.as_str(), args.len(), &target.kind) {
            ("sortBy", 2, kind) => {
                if !matches!(
                    kind,
                    ExprKind::List { .. }
                        | ExprKind::Select { .. }
                        | ExprKind::Ident(_)
                        | ExprKind::Comprehension(_)
                        | ExprKind::Call { .. }
                ) {
                    self.errors.push(self.error_at(
                        open,
                        "sortBy can only be applied to a list, identifier, comprehension, call or select expression",
                    ));
                    return self.node(open, ExprKind::Literal(Literal::Null), &[]);
                }
                let var = match &args[0].kind {
                    ExprKind::Ident(name) if !name.starts_with('.') => name.clone(),
                    _ => {
                        self.errors.push(self.error_at(open, "argument must be a simple name"));
                        return self.node(open, ExprKind::Literal(Literal::Null), &[]);
                    }
                };
                args.remove(0);
                let input = "@__sortBy_input__";
                let range = self.ident(open, input)?;
                let keys = self.expand(open, MacroKind::Map, var, None, range, args)?;
                let list = self.ident(open, input)?;
                let sorted = self.call(open, "@sortByAssociatedKeys", Some(list), vec![keys])?;
                return self.bind(open, input, target, sorted);
            }
            ("optMap" | "optFlatMap", 2, _) => {
                let ExprKind::Ident(var) = &args[0].kind else {
                    self.errors
                        .push(self.error_at(open, format!("{function}() variable name must be a simple identifier")));
                    return self.node(open, ExprKind::Literal(Literal::Null), &[]);
                };
                let var = var.clone();
                let mapped = args.remove(1);
                let has = self.call(open, "hasValue", Some(target.clone()), vec![])?;
                let value = self.call(open, "value", Some(target), vec![])?;
                let mut then = self.bind(open, &var, value, mapped)?;
                if function == "optMap" {
                    then = self.call(open, "optional.of", None, vec![then])?;
                }
                let none = self.call(open, "optional.none", None, vec![])?;
                return self.call(open, op::CONDITIONAL, None, vec![has, then, none]);
            }
            _ => {}
        }
        if let Some(kind) = two_variable_macro(&function, args.len()) {
            return self.two_variable_macro(open, kind, target, args);
        }
        let kind = match (function.as_str(), args.len()) {
            ("all", 2) => Some(MacroKind::All),
            ("exists", 2) => Some(MacroKind::Exists),
            ("exists_one", 2) => Some(MacroKind::ExistsOne),
            ("map", 2) => Some(MacroKind::Map),
            ("map", 3) => Some(MacroKind::MapFilter),
            ("filter", 2) => Some(MacroKind::Filter),
            _ => None,
        };
        let Some(kind) = kind else {
            return self.call(open, &function, Some(target), args);
        };
        let var = match &args[0].kind {
            ExprKind::Ident(name) if !name.starts_with('.') => name.clone(),
            _ => {
                self.errors.push(self.error_at(open, "argument must be a simple name"));
                return self.node(open, ExprKind::Literal(Literal::Null), &[]);
            }
        };
        if var == ACCUMULATOR_VAR {
            self.errors.push(self.error_at(open, "iteration variable overwrites accumulator variable"));
        }
        args.remove(0);
        self.expand(open, kind, var, None, target, args)
    }

    /// cel-go's two-variable comprehension macros (`ext.TwoVarComprehensions`): both
    /// variables must be distinct simple names that do not shadow the accumulator.
    fn two_variable_macro(&mut self, open: usize, kind: MacroKind, target: Expr, mut args: Vec<Expr>) -> PResult<Expr> {
        let mut names = Vec::with_capacity(2);
        for arg in &args[..2] {
            match &arg.kind {
                ExprKind::Ident(name) if !name.starts_with('.') => names.push(name.clone()),
                _ => {
                    self.errors.push(self.error_at(open, "argument must be a simple name"));
                    return self.node(open, ExprKind::Literal(Literal::Null), &[]);
                }
            }
        }
        let (var, var2) = (names[0].clone(), names[1].clone());
        let message = if var == var2 {
            Some(format!("duplicate variable name: {var}"))
        } else if [&var, &var2].iter().any(|v| *v == ACCUMULATOR_VAR || *v == LEGACY_ACCUMULATOR_VAR) {
            Some("iteration variable overwrites accumulator variable".to_owned())
        } else {
            None
        };
        if let Some(message) = message {
            self.errors.push(self.error_at(open, message));
            return self.node(open, ExprKind::Literal(Literal::Null), &[]);
        }
        args.drain(..2);
        self.expand(open, kind, var, Some(var2), target, args)
    }

    /// cel-go's local binding: a comprehension over an empty list whose accumulator is the
    /// bound variable and whose result is `result`.
    fn bind(&mut self, at: usize, var: &str, init: Expr, result: Expr) -> PResult<Expr> {
        let range = self.node(at, ExprKind::List { elements: vec![], optional_indices: vec![] }, &[])?;
        let cond = self.lit(at, Literal::Bool(false))?;
        let step = self.ident(at, var)?;
        let children = [range.id, init.id, cond.id, step.id, result.id];
        let comp = Comprehension {
            iter_var: "#unused".to_owned(),
            iter_var2: None,
            iter_range: range,
            accu_var: var.to_owned(),
            accu_init: init,
            loop_condition: cond,
            loop_step: step,
            result,
        };
        self.node(at, ExprKind::Comprehension(Box::new(comp)), &children)
    }

    fn ident(&mut self, at: usize, name: &str) -> PResult<Expr> {
        self.node(at, ExprKind::Ident(name.to_owned()), &[])
    }

    fn lit(&mut self, at: usize, l: Literal) -> PResult<Expr> {
        self.node(at, ExprKind::Literal(l), &[])
    }

    /// Expands a comprehension macro exactly as cel-go's `parser/macro.go` (and, with a second
    /// variable, `ext/comprehensions.go`) does.
    fn expand(
        &mut self,
        at: usize,
        kind: MacroKind,
        var: String,
        var2: Option<String>,
        range: Expr,
        mut args: Vec<Expr>,
    ) -> PResult<Expr> {
        let accu = ACCUMULATOR_VAR;
        let (init, cond, step, result) = match kind {
            MacroKind::All | MacroKind::Exists => {
                let all = kind == MacroKind::All;
                let pred = args.remove(0);
                let init = self.lit(at, Literal::Bool(all))?;
                let a = self.ident(at, accu)?;
                let cond_arg = if all { a } else { self.call(at, op::LOGICAL_NOT, None, vec![a])? };
                let cond = self.call(at, op::NOT_STRICTLY_FALSE, None, vec![cond_arg])?;
                let a = self.ident(at, accu)?;
                let step = self.call(at, if all { op::LOGICAL_AND } else { op::LOGICAL_OR }, None, vec![a, pred])?;
                let result = self.ident(at, accu)?;
                (init, cond, step, result)
            }
            MacroKind::ExistsOne => {
                let pred = args.remove(0);
                let init = self.lit(at, Literal::Int(0))?;
                let cond = self.lit(at, Literal::Bool(true))?;
                let a = self.ident(at, accu)?;
                let one = self.lit(at, Literal::Int(1))?;
                let inc = self.call(at, op::ADD, None, vec![a, one])?;
                let a = self.ident(at, accu)?;
                let step = self.call(at, op::CONDITIONAL, None, vec![pred, inc, a])?;
                let a = self.ident(at, accu)?;
                let one = self.lit(at, Literal::Int(1))?;
                let result = self.call(at, op::EQUALS, None, vec![a, one])?;
                (init, cond, step, result)
            }
            MacroKind::Map | MacroKind::MapFilter | MacroKind::Filter => {
                let (filter, value) = match kind {
                    MacroKind::Map => (None, args.remove(0)),
                    MacroKind::MapFilter => {
                        let f = args.remove(0);
                        (Some(f), args.remove(0))
                    }
                    _ => {
                        let f = args.remove(0);
                        (Some(f), self.ident(at, &var)?)
                    }
                };
                let init = self.node(at, ExprKind::List { elements: vec![], optional_indices: vec![] }, &[])?;
                let cond = self.lit(at, Literal::Bool(true))?;
                let vid = value.id;
                let single =
                    self.node(at, ExprKind::List { elements: vec![value], optional_indices: vec![] }, &[vid])?;
                let a = self.ident(at, accu)?;
                let append = self.call(at, op::ADD, None, vec![a, single])?;
                let step = match filter {
                    Some(f) => {
                        let a = self.ident(at, accu)?;
                        self.call(at, op::CONDITIONAL, None, vec![f, append, a])?
                    }
                    None => append,
                };
                let result = self.ident(at, accu)?;
                (init, cond, step, result)
            }
            MacroKind::TransformMap | MacroKind::TransformMapEntry => {
                // `@result = cel.@mapInsert(@result, k, transform)` (or, for an entry,
                // `cel.@mapInsert(@result, transform)`), behind the filter when there is one.
                let transform = args.pop();
                let filter = args.pop();
                let Some(transform) = transform else {
                    return Err(self.error_at(at, "Syntax error: internal: macro without arguments"));
                };
                let init = self.node(at, ExprKind::Map { entries: vec![] }, &[])?;
                let cond = self.lit(at, Literal::Bool(true))?;
                let a = self.ident(at, accu)?;
                let mut insert_args = vec![a];
                if kind == MacroKind::TransformMap {
                    insert_args.push(self.ident(at, &var)?);
                }
                insert_args.push(transform);
                let insert = self.call(at, MAP_INSERT, None, insert_args)?;
                let step = match filter {
                    Some(f) => {
                        let a = self.ident(at, accu)?;
                        self.call(at, op::CONDITIONAL, None, vec![f, insert, a])?
                    }
                    None => insert,
                };
                let result = self.ident(at, accu)?;
                (init, cond, step, result)
            }
        };
        let children = [range.id, init.id, cond.id, step.id, result.id];
        let comp = Comprehension {
            iter_var: var,
            iter_var2: var2,
            iter_range: range,
            accu_var: accu.to_owned(),
            accu_init: init,
            loop_condition: cond,
            loop_step: step,
            result,
        };
        self.node(at, ExprKind::Comprehension(Box::new(comp)), &children)
    }
}

/// The precedence (loosest 1) and function of a binary operator token.
fn binary_op(t: &Tok) -> Option<(u8, &'static str)> {
    Some(match t {
        Tok::OrOr => (1, op::LOGICAL_OR),
        Tok::AndAnd => (2, op::LOGICAL_AND),
        Tok::Less => (3, op::LESS),
        Tok::LessEq => (3, op::LESS_EQUALS),
        Tok::Greater => (3, op::GREATER),
        Tok::GreaterEq => (3, op::GREATER_EQUALS),
        Tok::EqEq => (3, op::EQUALS),
        Tok::NotEq => (3, op::NOT_EQUALS),
        Tok::In => (3, op::IN),
        Tok::Plus => (4, op::ADD),
        Tok::Minus => (4, op::SUBTRACT),
        Tok::Star => (5, op::MULTIPLY),
        Tok::Slash => (5, op::DIVIDE),
        Tok::Percent => (5, op::MODULO),
        _ => return None,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MacroKind {
    All,
    Exists,
    ExistsOne,
    Map,
    MapFilter,
    Filter,
    TransformMap,
    TransformMapEntry,
}

/// The two-variable macro `function` with `arg_count` arguments (variables included) names,
/// if any. `transformList` expands like `map` (with a filter, like the three-argument `map`).
fn two_variable_macro(function: &str, arg_count: usize) -> Option<MacroKind> {
    Some(match (function, arg_count) {
        ("all", 3) => MacroKind::All,
        ("exists", 3) => MacroKind::Exists,
        ("existsOne" | "exists_one", 3) => MacroKind::ExistsOne,
        ("transformList", 3) => MacroKind::Map,
        ("transformList", 4) => MacroKind::MapFilter,
        ("transformMap", 3 | 4) => MacroKind::TransformMap,
        ("transformMapEntry", 3 | 4) => MacroKind::TransformMapEntry,
        _ => return None,
    })
}
