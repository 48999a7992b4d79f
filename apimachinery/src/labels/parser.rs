//! The lexer and recursive-descent parser of label selector strings, following Kubernetes' own parser and its
//! error texts.

use super::{aggregate, build_requirement, Operator, Requirement};
use crate::field_error::FieldError;
use crate::validation::is_qualified_name;

/// A token of the selector language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// Whether a token is read as a key and operator, or as a value (where `in` and `notin` are plain identifiers).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a selector into tokens, ending with [`Token::EndOfString`]. Like Kubernetes' lexer, a NUL byte where a
/// token would start ends the input, and one right after a token is skipped.
pub(super) fn lex(input: &str) -> Vec<(Token, String)> {
    let bytes = input.as_bytes();
    let mut pos = 0;
    let mut tokens = Vec::new();
    loop {
        while bytes.get(pos).copied().is_some_and(is_whitespace) {
            pos += 1;
        }
        let Some(&first) = bytes.get(pos) else {
            tokens.push((Token::EndOfString, String::new()));
            return tokens;
        };
        if first == 0 {
            tokens.push((Token::EndOfString, String::new()));
            return tokens;
        }
        if is_special_symbol(first) {
            // The longest operator: "==" and "!=" are the only two-character ones.
            let pair = bytes.get(pos..pos + 2);
            let (token, len) = match (first, pair) {
                (b'=', Some(b"==")) => (Token::DoubleEquals, 2),
                (b'!', Some(b"!=")) => (Token::NotEquals, 2),
                (b'=', _) => (Token::Equals, 1),
                (b'!', _) => (Token::DoesNotExist, 1),
                (b'(', _) => (Token::OpenPar, 1),
                (b')', _) => (Token::ClosedPar, 1),
                (b',', _) => (Token::Comma, 1),
                (b'>', _) => (Token::GreaterThan, 1),
                _ => (Token::LessThan, 1),
            };
            tokens.push((token, input.get(pos..pos + len).unwrap_or_default().to_string()));
            pos += len;
            if bytes.get(pos) == Some(&0) {
                pos += 1; // Kubernetes' lexer consumes a NUL that follows an operator.
            }
            continue;
        }
        let start = pos;
        while bytes
            .get(pos)
            .is_some_and(|&b| b != 0 && !is_special_symbol(b) && !is_whitespace(b))
        {
            pos += 1;
        }
        // Every delimiter is ASCII, so the identifier is a valid slice of the input.
        let literal = input.get(start..pos).unwrap_or_default().to_string();
        if bytes.get(pos) == Some(&0) {
            pos += 1; // Kubernetes' lexer consumes the NUL that ends an identifier.
        }
        let token = match literal.as_str() {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Identifier,
        };
        tokens.push((token, literal));
    }
}

/// A recursive-descent parser over the tokens, following Kubernetes' parser and its error texts.
pub(super) struct Parser {
    pub(super) tokens: Vec<(Token, String)>,
    pub(super) position: usize,
}

impl Parser {
    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = self
            .tokens
            .get(self.position)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        let token = match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => token,
        };
        (token, literal)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.lookahead(context);
        self.position += 1;
        item
    }

    pub(super) fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, next_literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(format!("found '{next_literal}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{literal}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(operator) = operator {
            return build_requirement(key, operator, Vec::new()).map_err(|errs| aggregate(&errs));
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        build_requirement(key, operator, values).map_err(|errs| aggregate(&errs))
    }

    /// Reads `[!] KEY`; the operator is known when it is `!` or when the key ends the requirement (exists).
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let key_errs = is_qualified_name(&literal);
        if !key_errs.is_empty() {
            // Kubernetes checks the key here against a nil field path, which it prints as "<nil>".
            return Err(FieldError::invalid("<nil>", &literal, &key_errs.join("; ")).to_string());
        }
        let (next, _) = self.lookahead(Context::Values);
        if operator.is_none() && matches!(next, Token::EndOfString | Token::Comma) {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        match token {
            Token::In => Ok(Operator::In),
            Token::Equals => Ok(Operator::Equals),
            Token::DoubleEquals => Ok(Operator::DoubleEquals),
            Token::GreaterThan => Ok(Operator::GreaterThan),
            Token::LessThan => Ok(Operator::LessThan),
            Token::NotIn => Ok(Operator::NotIn),
            Token::NotEquals => Ok(Operator::NotEquals),
            _ => Err(format!("found '{literal}', expected: in, notin, =, ==, !=, gt, lt")),
        }
    }

    /// Reads `( values )`; the result is sorted and without duplicates, as Kubernetes collects it in a set.
    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        let values = match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                // The list ends only before ')', which is consumed here.
                let (token, _) = self.consume(Context::Values);
                if token != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                values
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                vec![String::new()]
            }
            _ => return Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        };
        let mut values = values;
        values.sort_unstable();
        values.dedup();
        Ok(values)
    }

    /// Reads a comma-separated list of possibly empty values, stopping before `)`.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    values.push(literal);
                    let (next, next_literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => {}
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{next_literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // A comma first, last or doubled stands for an empty value.
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if next == Token::Comma {
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    /// Reads the single value after `=`, `==`, `!=`, `>` or `<`; nothing before `,` or the end is the empty value.
    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}
