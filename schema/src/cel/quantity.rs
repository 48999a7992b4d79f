//! Kubernetes' CEL quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`): `isQuantity(string)`,
//! `quantity(string)`, and on a `kubernetes.Quantity`: `isInteger()`, `asInteger()`, `asApproximateFloat()`,
//! `add`/`sub` (a quantity or an int), `isGreaterThan`, `isLessThan`, `compareTo`, the global `sign(quantity)`
//! (kube declares it as a function, not a method), and `==`, which compares values (`1000m == 1`).
//!
//! Parsing follows `resource.ParseQuantity` of apimachinery: a signed decimal number with an optional fraction,
//! then a suffix that is a decimal SI one (`n u m k M G T P E`), a binary one (`Ki` ... `Ei`) or a decimal exponent
//! (`e3`, `E-2`); the exact value is rounded away from zero to a multiple of 10^-9, and binary quantities are
//! capped at 2^63-1. Values are kept exactly, as an arbitrary-precision integer times a power of ten.
//!
//! apimachinery keeps a quantity either as an int64 times a power of ten or as an arbitrary decimal, and
//! `AsInt64` (so `isInteger` and `asInteger`) only succeeds for the first form with a non-negative scale:
//! `quantity('1000m').isInteger()` is false in kube. [`Quantity::small`] models that form.

use std::any::Any;
use std::cmp::Ordering;

use ::cel::common::types::{CelBool, CelDouble, CelInt, Type};
use ::cel::common::value::{CowVal, StaticVal, Val};
use ::cel::ExecutionError;
use num_bigint::{BigInt, Sign};

use super::values::string_arg;

/// The CEL type of quantities, named as kube names it.
pub(super) static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// apimachinery's `ErrFormatWrong`.
pub(super) const ERR_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// apimachinery's `ErrSuffix`.
pub(super) const ERR_SUFFIX: &str = "unable to parse quantity's suffix";
/// apimachinery's `ErrNumeric`.
pub(super) const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";

/// The widest alignment of two exponents an addition performs (a sum of `1e100000` and `1` would need that many
/// digits); beyond it the addition is an error rather than a runaway allocation.
const MAX_ALIGNMENT: i64 = 10_000;

/// An exact decimal: `mantissa * 10^exponent`, with no trailing zero in a non-zero mantissa, and exponent 0 for 0.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    mantissa: BigInt,
    exponent: i64,
}

fn pow10(n: u32) -> BigInt {
    BigInt::from(10u8).pow(n)
}

fn digits(m: &BigInt) -> i64 {
    if m.sign() == Sign::NoSign {
        0
    } else {
        m.magnitude().to_string().len() as i64
    }
}

impl Decimal {
    fn new(mut mantissa: BigInt, mut exponent: i64) -> Decimal {
        if mantissa.sign() == Sign::NoSign {
            return Decimal { mantissa, exponent: 0 };
        }
        let ten = BigInt::from(10u8);
        while (&mantissa % &ten).sign() == Sign::NoSign {
            mantissa /= &ten;
            exponent += 1;
        }
        Decimal { mantissa, exponent }
    }

    fn sign(&self) -> i64 {
        match self.mantissa.sign() {
            Sign::Minus => -1,
            Sign::NoSign => 0,
            Sign::Plus => 1,
        }
    }

    /// The exact order of two decimals, without building a number wider than the wider mantissa.
    fn cmp(&self, other: &Decimal) -> Ordering {
        let (a, b) = (self.sign(), other.sign());
        if a != b || a == 0 {
            return a.cmp(&b);
        }
        // Same sign, both non-zero: compare the positions of the leading digits, then the aligned mantissas.
        let (la, lb) = (
            digits(&self.mantissa) + self.exponent,
            digits(&other.mantissa) + other.exponent,
        );
        let magnitude = if la != lb {
            la.cmp(&lb)
        } else {
            let low = self.exponent.min(other.exponent);
            let ma = self.mantissa.magnitude() * pow10((self.exponent - low) as u32).magnitude();
            let mb = other.mantissa.magnitude() * pow10((other.exponent - low) as u32).magnitude();
            ma.cmp(&mb)
        };
        if a < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    fn add(&self, other: &Decimal) -> Result<Decimal, ExecutionError> {
        if other.sign() == 0 {
            return Ok(self.clone());
        }
        if self.sign() == 0 {
            return Ok(other.clone());
        }
        let low = self.exponent.min(other.exponent);
        let high = self.exponent.max(other.exponent);
        if high - low > MAX_ALIGNMENT {
            return Err(ExecutionError::function_error("add", "quantity out of range"));
        }
        let a = &self.mantissa * pow10((self.exponent - low) as u32);
        let b = &other.mantissa * pow10((other.exponent - low) as u32);
        Ok(Decimal::new(a + b, low))
    }

    fn neg(&self) -> Decimal {
        Decimal {
            mantissa: -&self.mantissa,
            exponent: self.exponent,
        }
    }

    /// Rounds away from zero to a multiple of 10^-9, as `ParseQuantity` does.
    fn round_up_to_nano(self) -> Decimal {
        if self.exponent >= -9 {
            return self;
        }
        let shift = -9 - self.exponent;
        let unit = BigInt::from(self.sign());
        if digits(&self.mantissa) <= shift {
            // The whole value is below a nano (the mantissa has no trailing zero, so it is not 0 once cut).
            return Decimal::new(unit, -9);
        }
        let divisor = pow10(shift as u32);
        let mut q = &self.mantissa / &divisor;
        if (&self.mantissa % &divisor).sign() != Sign::NoSign {
            q += unit;
        }
        Decimal::new(q, -9)
    }
}

/// A `kubernetes.Quantity` value.
#[derive(Debug, Clone)]
pub(super) struct Quantity {
    /// The exact value.
    value: Decimal,
    /// apimachinery's `int64Amount` form (value, base-10 scale), if the quantity is held in it.
    small: Option<(i64, i32)>,
}

/// `value * 10^scale` for a non-negative scale, if it fits an int64 (`positiveScaleInt64`).
fn scale_up(value: i64, scale: i32) -> Option<i64> {
    if value == 0 {
        return Some(0);
    }
    let mut out = value;
    for _ in 0..scale {
        out = out.checked_mul(10)?;
    }
    Some(out)
}

/// `int64Amount.Add`: the sum in the int64 form, at the smaller scale, if it fits.
fn small_add(a: (i64, i32), b: (i64, i32)) -> Option<(i64, i32)> {
    if b.0 == 0 {
        return Some(a);
    }
    if a.0 == 0 {
        return Some(b);
    }
    let scale = a.1.min(b.1);
    let x = scale_up(a.0, a.1 - scale)?;
    let y = scale_up(b.0, b.1 - scale)?;
    Some((x.checked_add(y)?, scale))
}

impl Quantity {
    fn from_small(value: i64, scale: i32) -> Quantity {
        Quantity {
            value: Decimal::new(BigInt::from(value), i64::from(scale)),
            small: Some((value, scale)),
        }
    }

    /// `AsInt64`: the value as an int64, when held in the int64 form with a non-negative scale.
    pub(super) fn as_int64(&self) -> Option<i64> {
        let (value, scale) = self.small?;
        match scale {
            0 => Some(value),
            s if s < 0 => None,
            s => scale_up(value, s),
        }
    }

    /// `Add` (or `Sub` with `negate`): in the int64 form while both are and the result fits, else exactly.
    fn plus(&self, other: &Quantity, negate: bool) -> Result<Quantity, ExecutionError> {
        let rhs_small = other
            .small
            .map(|(v, s)| if negate { (v.wrapping_neg(), s) } else { (v, s) });
        if let (Some(a), Some(b)) = (self.small, rhs_small) {
            if let Some((v, s)) = small_add(a, b) {
                return Ok(Quantity::from_small(v, s));
            }
        }
        let rhs = if negate { other.value.neg() } else { other.value.clone() };
        Ok(Quantity {
            value: self.value.add(&rhs)?,
            small: None,
        })
    }

    /// `AsApproximateFloat64`: the held integer as a float times Go's `math.Pow10` of the scale, rounded twice as
    /// there (`quantity('0.3').asApproximateFloat()` is 0.30000000000000004).
    fn approximate_float(&self) -> f64 {
        let (base, exponent) = match self.small {
            Some((value, scale)) => (value as f64, i64::from(scale)),
            None => (
                self.value.mantissa.to_string().parse().unwrap_or(0.0),
                self.value.exponent,
            ),
        };
        if exponent == 0 {
            return base;
        }
        // The correctly rounded power of ten, 0 or infinity out of range, as `math.Pow10`.
        let power: f64 = format!("1e{exponent}").parse().unwrap_or(0.0);
        base * power
    }

    /// The exact order of two quantities (`Cmp`).
    pub(super) fn compare(&self, other: &Quantity) -> Ordering {
        self.value.cmp(&other.value)
    }
}

impl Val for Quantity {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }
    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Quantity>()
            .is_some_and(|o| self.compare(o) == Ordering::Equal)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for Quantity {}

/// The parts of a quantity's text (`parseQuantityString`): sign, integer digits without leading zeros, fraction
/// digits, suffix.
fn split(s: &str) -> Result<(bool, &str, &str, &str), &'static str> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    let num_start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = &s[num_start..pos];
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < b.len() {
        return Err(ERR_FORMAT);
    }
    Ok((positive, num, denom, &s[suffix_start..]))
}

/// The base, exponent and whether the suffix is binary (`suffixHandler.interpret`).
fn suffix(s: &str) -> Option<(u32, i32, bool)> {
    let decimal = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
    if let Some(i) = decimal.iter().position(|d| *d == s) {
        return Some((10, 3 * i as i32 - 9, false));
    }
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(i) = binary.iter().position(|d| *d == s) {
        return Some((2, 10 * (i as i32 + 1), true));
    }
    let rest = s.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
    // Go parses an int64 and keeps its low 32 bits.
    rest.parse::<i64>().ok().map(|e| (10, e as i32, false))
}

/// `resource.ParseQuantity`: the quantity a string denotes, or apimachinery's error message.
pub(super) fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(ERR_FORMAT);
    }
    let (positive, num, denom, suf) = split(s)?;
    let (base, exponent, binary) = suffix(suf).ok_or(ERR_SUFFIX)?;
    let num = if num.is_empty() { "0" } else { num };
    let sign: i64 = if positive { 1 } else { -1 };
    // The int64 form apimachinery's fast path builds.
    if !binary {
        let scale = exponent.saturating_sub(denom.len() as i32);
        if num.len() + denom.len() <= 18 && scale >= -9 {
            let value: i64 = format!("{num}{denom}").parse().map_err(|_| ERR_NUMERIC)?;
            return Ok(Quantity::from_small(sign * value, scale));
        }
    } else if denom.is_empty() {
        let precision = 15 - num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
        if precision >= 0 {
            let value: i64 = num.parse().map_err(|_| ERR_NUMERIC)?;
            if let Some(v) = value.checked_mul(1i64 << exponent) {
                return Ok(Quantity::from_small(sign * v, 0));
            }
        }
    }
    // Trailing zeros go into the exponent before the digits become a number: a long run of them costs nothing.
    let all = format!("{num}{denom}");
    let digits = all.trim_end_matches('0');
    let zeros = (all.len() - digits.len()) as i64 - denom.len() as i64;
    let mantissa: BigInt = if digits.is_empty() {
        BigInt::from(0u8)
    } else {
        digits.parse().map_err(|_| ERR_NUMERIC)?
    };
    let mantissa = mantissa * sign;
    let mut value = if base == 2 {
        Decimal::new(mantissa * (BigInt::from(1u8) << exponent as u32), zeros)
    } else {
        Decimal::new(mantissa, i64::from(exponent) + zeros)
    };
    value = value.round_up_to_nano();
    let max = Decimal::new(BigInt::from(i64::MAX), 0);
    if binary && value.sign() != 0 {
        let magnitude = if value.sign() < 0 { value.neg() } else { value.clone() };
        if magnitude.cmp(&max) == Ordering::Greater {
            value = if value.sign() < 0 { max.neg() } else { max };
        }
    }
    Ok(Quantity { value, small: None })
}

fn quantity_arg<'a>(v: Option<&'a CowVal<'_, '_>>) -> Result<&'a Quantity, ExecutionError> {
    let v = v.ok_or_else(ExecutionError::missing_argument_or_target)?;
    v.downcast_ref::<Quantity>()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: v.get_type().name().to_owned(),
            want: QUANTITY_TYPE.name().to_owned(),
        })
}

fn text_arg<'a>(args: &'a [CowVal<'_, '_>]) -> Result<&'a str, ExecutionError> {
    string_arg(
        args.first()
            .ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?,
    )
}

fn owned<'b, 'v, T: Val + 'static>(v: T) -> CowVal<'b, 'v> {
    CowVal::owned(v)
}

/// `isQuantity(string) -> bool`.
pub(super) fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(owned(CelBool::from(parse(text_arg(&args)?).is_ok())))
}

/// `quantity(string) -> Quantity`, an error with apimachinery's message for an invalid string.
pub(super) fn quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    parse(text_arg(&args)?)
        .map(owned)
        .map_err(|e| ExecutionError::function_error("quantity", e))
}

/// `sign(Quantity) -> int`.
pub(super) fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(owned(CelInt::from(quantity_arg(args.first())?.value.sign())))
}

/// `<Quantity>.isInteger() -> bool`.
pub(super) fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(owned(CelBool::from(quantity_arg(args.first())?.as_int64().is_some())))
}

/// `<Quantity>.asInteger() -> int`, an error when `isInteger()` is false.
pub(super) fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    quantity_arg(args.first())?
        .as_int64()
        .map(|i| owned(CelInt::from(i)))
        .ok_or_else(|| ExecutionError::function_error("asInteger", "cannot convert value to integer"))
}

/// `<Quantity>.asApproximateFloat() -> double`.
pub(super) fn as_approximate_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(owned(CelDouble::from(quantity_arg(args.first())?.approximate_float())))
}

fn order(args: &[CowVal<'_, '_>]) -> Result<Ordering, ExecutionError> {
    Ok(quantity_arg(args.first())?.compare(quantity_arg(args.get(1))?))
}

/// `<Quantity>.isGreaterThan(Quantity) -> bool`.
pub(super) fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(owned(CelBool::from(order(&args)? == Ordering::Greater)))
}

/// `<Quantity>.isLessThan(Quantity) -> bool`.
pub(super) fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(owned(CelBool::from(order(&args)? == Ordering::Less)))
}

/// `<Quantity>.compareTo(Quantity) -> int`: -1, 0 or 1.
pub(super) fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(owned(CelInt::from(order(&args)? as i64)))
}

fn arith<'b, 'v>(args: &[CowVal<'b, 'v>], negate: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let q = quantity_arg(args.first())?;
    let rhs = args.get(1).ok_or_else(ExecutionError::missing_argument_or_target)?;
    let sum = match rhs.downcast_ref::<CelInt>() {
        // `resource.NewQuantity(i, DecimalExponent)`: the int64 form at scale 0.
        Some(i) => q.plus(&Quantity::from_small(*i.inner(), 0), negate)?,
        None => q.plus(quantity_arg(Some(rhs))?, negate)?,
    };
    Ok(owned(sum))
}

/// `<Quantity>.add(Quantity|int) -> Quantity`.
pub(super) fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arith(&args, false)
}

/// `<Quantity>.sub(Quantity|int) -> Quantity`.
pub(super) fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arith(&args, true)
}

#[cfg(test)]
mod tests;
