//! The parser of Kubernetes' JSONPath templates (`k8s.io/client-go/util/jsonpath/parser.go`): text with actions in
//! braces, each action a list of nodes (fields, array indices and slices, unions, filters, recursive descent,
//! wildcards and literals). It accepts what kube's parser accepts, with kube's error messages.

use std::sync::LazyLock;

use regex::Regex;

/// A node of a parsed template.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Node {
    /// Text outside actions, or a quoted string inside one.
    Text(String),
    /// An action (`{...}`) or a sub-expression: its nodes, applied in turn.
    List(Vec<Node>),
    /// `.name`: a key of an object.
    Field(String),
    /// `.*` or `[*]` of an object: every value.
    Wildcard,
    /// `[start:end:step]`, `[n]`, `[*]`.
    Array([Param; 3]),
    /// `[?(left op right)]`, or `[?(left)]` (op `exists`).
    Filter {
        /// The left operand, evaluated on each element.
        left: Vec<Node>,
        /// The right operand.
        right: Vec<Node>,
        /// `==`, `!=`, `<`, `<=`, `>`, `>=` or `exists` (others fail when evaluated, as in kube).
        op: String,
    },
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `..`: the value and everything under it.
    Recursive,
    /// `[a,b]`: each sub-expression's results in turn.
    Union(Vec<Vec<Node>>),
    /// A bare word other than `true` and `false` (kube knows `range` and `end`; anything else fails evaluation).
    Identifier(String),
}

/// One bound of an array slice, as kube's `ParamsEntry`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Param {
    pub value: i64,
    pub known: bool,
    /// The end of `[n]`: derived from the start.
    pub derived: bool,
}

static DICT_KEY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^'([^']*)'$").expect("valid regex"));
static SLICE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?$").expect("valid regex"));
static COMPARISON: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^([^!<>=]+)([!<>=]+)(.+?)$").expect("valid regex"));

/// Parses a template into its top-level nodes (texts and action lists).
pub(super) fn parse(text: &str) -> Result<Vec<Node>, String> {
    let mut p = Parser {
        input: text,
        pos: 0,
        start: 0,
    };
    let mut root = Vec::new();
    p.parse_text(&mut root)?;
    Ok(root)
}

/// Parses one action's text as kube's `parseAction`: the nodes of `{text}`'s first action.
fn parse_action(text: &str) -> Result<Vec<Node>, String> {
    let root = parse(&format!("{{{text}}}"))?;
    match root.into_iter().next() {
        Some(Node::List(nodes)) => Ok(nodes),
        _ => Err(format!("invalid action {text:?}")),
    }
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
}

/// Characters that end a field name or identifier.
fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
        }
    }

    fn consume(&mut self) -> &'a str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    /// Text up to the next `{`, then the action it opens; and so on to the end.
    fn parse_text(&mut self, root: &mut Vec<Node>) -> Result<(), String> {
        loop {
            match self.rest().find('{') {
                Some(at) => {
                    self.pos += at;
                    if self.pos > self.start {
                        let text = self.consume().to_owned();
                        root.push(Node::Text(text));
                    }
                    self.pos += 1;
                    self.consume();
                    let mut action = Vec::new();
                    self.parse_inside_action(&mut action)?;
                    root.push(Node::List(action));
                }
                None => {
                    self.pos = self.input.len();
                    if self.pos > self.start {
                        let text = self.consume().to_owned();
                        root.push(Node::Text(text));
                    }
                    return Ok(());
                }
            }
        }
    }

    /// The nodes of an action, up to its closing `}`.
    fn parse_inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            if self.rest().starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(());
            }
            if self.rest().starts_with("[?(") {
                self.parse_filter(cur)?;
                continue;
            }
            if self.rest().starts_with("..") {
                if matches!(cur.last(), Some(Node::Recursive)) {
                    return Err("invalid multiple recursive descent".into());
                }
                self.pos += 2;
                self.consume();
                cur.push(Node::Recursive);
                if self.peek().is_some_and(is_alphanumeric) {
                    self.parse_field(cur);
                }
                continue;
            }
            match self.next() {
                None | Some('\r') | Some('\n') => return Err("unclosed action".into()),
                Some(' ') | Some('@') | Some('$') => {
                    self.consume();
                }
                Some('[') => self.parse_array(cur)?,
                Some(q @ ('"' | '\'')) => self.parse_quote(cur, q)?,
                Some('.') => self.parse_field(cur),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.backup(Some(c));
                    self.parse_number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup(Some(c));
                    self.parse_identifier(cur)?;
                }
                Some(c) => {
                    return Err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        u32::from(c)
                    ))
                }
            }
        }
    }

    fn parse_identifier(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            let c = self.next();
            if is_terminator(c) {
                self.backup(c);
                break;
            }
        }
        let value = self.consume();
        cur.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            // A printer column has one value: kube's range loops over several results and is refused here.
            "range" | "end" => return Err(format!("{value} is not supported in a printer column")),
            other => Node::Identifier(other.to_owned()),
        });
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            let c = self.next();
            if !matches!(c, Some(c) if c == '.' || c.is_ascii_digit()) {
                self.backup(c);
                break;
            }
        }
        let value = self.consume();
        if let Ok(i) = value.parse::<i64>() {
            cur.push(Node::Int(i));
        } else if let Ok(f) = value.parse::<f64>() {
            cur.push(Node::Float(f));
        } else {
            return Err(format!("cannot parse number {value}"));
        }
        Ok(())
    }

    /// `[...]` after its `[`: an index or slice, `*`, a quoted key, or a union of those.
    fn parse_array(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".into()),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let text = self.consume();
        let mut text = &text[1..text.len() - 1];
        if text == "*" {
            text = ":";
        }
        if text.contains(',') {
            let union = text
                .split(',')
                .map(|part| parse_action(&format!("[{}]", part.trim_matches(' '))))
                .collect::<Result<Vec<_>, _>>()?;
            cur.push(Node::Union(union));
            return Ok(());
        }
        if let Some(key) = DICT_KEY.captures(text) {
            cur.extend(parse_action(&format!(".{}", &key[1]))?);
            return Ok(());
        }
        let Some(groups) = SLICE.captures(text) else {
            return Err(format!("invalid array index {text}"));
        };
        let mut params = [Param::default(); 3];
        for i in 0..3 {
            let raw = groups.get(i + 1).map_or("", |m| m.as_str());
            if raw.is_empty() {
                if i == 1 {
                    params[1] = Param {
                        value: params[0].value + 1,
                        known: true,
                        derived: true,
                    };
                }
                continue;
            }
            let raw = if i > 0 { &raw[1..] } else { raw };
            if i > 0 && raw.is_empty() {
                continue;
            }
            let value = raw
                .parse::<i64>()
                .map_err(|_| format!("array index {raw} is not a number"))?;
            params[i] = Param {
                value,
                known: true,
                derived: false,
            };
        }
        cur.push(Node::Array(params));
        Ok(())
    }

    /// `[?(...)]`: a comparison, or an existence test when there is no operator.
    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> Result<(), String> {
        self.pos += "[?(".len();
        self.consume();
        let (mut begin, mut end, mut pair) = (false, false, '"');
        loop {
            let before = self.pos;
            match self.next() {
                None | Some('\n') => return Err("unterminated filter".into()),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                    } else if q == pair && !self.input[..before].ends_with('\\') {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".into());
        }
        let text = self.consume();
        let text = &text[..text.len() - 2];
        let node = match COMPARISON.captures(text) {
            None => Node::Filter {
                left: parse_action(text)?,
                right: Vec::new(),
                op: "exists".into(),
            },
            Some(c) => Node::Filter {
                left: parse_action(&c[1])?,
                right: parse_action(&c[3])?,
                op: c[2].to_owned(),
            },
        };
        cur.push(node);
        Ok(())
    }

    /// A quoted string after its opening quote.
    fn parse_quote(&mut self, cur: &mut Vec<Node>, quote: char) -> Result<(), String> {
        loop {
            let before = self.pos;
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".into()),
                Some(c) if c == quote && !self.input[..before].ends_with('\\') => break,
                Some(_) => {}
            }
        }
        let value = self.consume();
        let text = unquote(value).ok_or_else(|| format!("unquote string {value} error invalid syntax"))?;
        cur.push(Node::Text(text));
        Ok(())
    }

    /// A field name after its `.`, up to a terminator that is not escaped; `*` is the wildcard.
    fn parse_field(&mut self, cur: &mut Vec<Node>) {
        self.consume();
        loop {
            let c = self.next();
            if c == Some('\\') {
                self.next();
            } else if is_terminator(c) {
                self.backup(c);
                break;
            }
        }
        let value = self.consume();
        cur.push(if value == "*" {
            Node::Wildcard
        } else {
            Node::Field(value.replace('\\', ""))
        });
    }
}

/// The character of `n` hexadecimal digits.
fn hex(chars: &mut std::str::Chars<'_>, n: usize) -> Option<char> {
    let digits: String = chars.by_ref().take(n).collect();
    (digits.len() == n)
        .then(|| u32::from_str_radix(&digits, 16).ok())
        .flatten()
        .and_then(char::from_u32)
}

/// A quoted string's value, as Go's `strconv.Unquote` reads it, with single quotes too (kube's `UnquoteExtend`).
fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    let inner = s.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'a' => '\x07',
            'b' => '\x08',
            'f' => '\x0c',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\x0b',
            '\\' => '\\',
            '\'' => '\'',
            '"' => '"',
            'x' => hex(&mut chars, 2)?,
            'u' => hex(&mut chars, 4)?,
            'U' => hex(&mut chars, 8)?,
            d @ '0'..='7' => {
                let rest: String = chars.by_ref().take(2).collect();
                let v = u32::from_str_radix(&format!("{d}{rest}"), 8)
                    .ok()
                    .filter(|v| *v < 256)?;
                char::from_u32(v)?
            }
            _ => return None,
        });
    }
    Some(out)
}
