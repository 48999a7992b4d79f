//! Parsing and comparison tables for `quantity.rs`.

use std::cmp::Ordering;

use super::{parse, ERR_FORMAT, ERR_SUFFIX};

fn q(s: &str) -> super::Quantity {
    parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn every_quantity_form_parses_to_its_exact_value() {
    // (text, an equal plain decimal): both parse and compare equal.
    for (text, plain) in [
        ("0", "0"),
        ("1", "1"),
        ("+1", "1"),
        ("-1", "-1"),
        ("007", "7"),
        ("1.5", "1.5"),
        (".5", "0.5"),
        ("5.", "5"),
        ("1n", "0.000000001"),
        ("1u", "0.000001"),
        ("1500m", "1.5"),
        ("1k", "1000"),
        ("1M", "1000000"),
        ("1G", "1000000000"),
        ("1T", "1000000000000"),
        ("1P", "1000000000000000"),
        ("1E", "1000000000000000000"),
        ("1Ki", "1024"),
        ("1Mi", "1048576"),
        ("1Gi", "1073741824"),
        ("1Ti", "1099511627776"),
        ("1Pi", "1125899906842624"),
        ("1Ei", "1152921504606846976"),
        ("1.5Gi", "1610612736"),
        ("0.5Ki", "512"),
        ("1e3", "1000"),
        ("1E3", "1000"),
        ("1e+3", "1000"),
        ("15e-1", "1.5"),
        ("-2.5e2", "-250"),
        // Rounded away from zero to a nano.
        ("0.1n", "0.000000001"),
        ("-0.1n", "-0.000000001"),
        ("1e-20", "0.000000001"),
        ("1.0000000001", "1.000000001"),
        // Binary quantities are capped at 2^63-1.
        ("8Ei", "9223372036854775807"),
        ("-16Ei", "-9223372036854775807"),
        // Beyond 128 bits, exactly.
        (
            "123456789012345678901234567890123456789012",
            "123456789012345678901234567890123456789012",
        ),
        ("1e40", "10000000000000000000000000000000000000000"),
        (
            "100000000000000000000000000000000000000000000000000.000000000000000000000000000000k",
            "1e53",
        ),
        ("1024.0000000000000000000000Ki", "1048576"),
        ("0.00000000000000000000000000000000000000000000000000", "0"),
    ] {
        assert_eq!(q(text).compare(&q(plain)), Ordering::Equal, "{text} == {plain}");
    }
}

#[test]
fn what_apimachinery_refuses_is_refused_with_its_message() {
    for (text, error) in [
        ("", ERR_FORMAT),
        ("lots", ERR_FORMAT),
        ("1.5.5", ERR_FORMAT),
        ("1Gb", ERR_FORMAT),
        ("1 Gi", ERR_FORMAT),
        ("1e1.5", ERR_FORMAT),
        ("1K", ERR_SUFFIX),
        ("1mi", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("1Ki5", ERR_SUFFIX),
        ("1e99999999999999999999", ERR_SUFFIX),
    ] {
        assert_eq!(parse(text).err(), Some(error), "{text:?}");
    }
}

#[test]
fn comparisons_are_exact() {
    for (a, b, order) in [
        ("1Gi", "1G", Ordering::Greater),
        ("1000m", "1", Ordering::Equal),
        ("999999999n", "1", Ordering::Less),
        ("-1", "1", Ordering::Less),
        ("-2", "-1", Ordering::Less),
        ("0", "-0", Ordering::Equal),
        (
            "1e40",
            "99999999999999999999999999999999999999999e-1",
            Ordering::Greater,
        ),
        ("1e1000", "1e999", Ordering::Greater),
        ("-1e1000", "1n", Ordering::Less),
        ("9223372036854775807", "9223372036854775808", Ordering::Less),
    ] {
        assert_eq!(q(a).compare(&q(b)), order, "{a} vs {b}");
        assert_eq!(q(b).compare(&q(a)), order.reverse(), "{b} vs {a}");
    }
}

#[test]
fn as_int64_follows_apimachinerys_int64_form() {
    for (text, int) in [
        ("1", Some(1)),
        ("1Ki", Some(1024)),
        ("1k", Some(1000)),
        ("-5G", Some(-5_000_000_000)),
        // Held with a negative scale, or as an arbitrary decimal: not an int64 for apimachinery.
        ("1000m", None),
        ("1.0", None),
        ("0.5Ki", None),
        ("1.5", None),
        ("10E", None),
        ("1e40", None),
    ] {
        assert_eq!(q(text).as_int64(), int, "{text}");
    }
}

#[test]
fn additions_stay_in_the_int64_form_while_they_fit() {
    let sum = q("1").plus(&q("500m"), false).unwrap();
    assert_eq!(sum.compare(&q("1.5")), Ordering::Equal);
    assert_eq!(sum.as_int64(), None);
    let sum = q("1k").plus(&q("1"), false).unwrap();
    assert_eq!(sum.as_int64(), Some(1001));
    let big = q("9223372036854775807").plus(&q("1"), false).unwrap();
    assert_eq!(big.compare(&q("9223372036854775808")), Ordering::Equal);
    assert_eq!(big.as_int64(), None);
    let diff = q("1Gi").plus(&q("1Gi"), true).unwrap();
    assert_eq!(diff.compare(&q("0")), Ordering::Equal);
    assert!(q("1e100000").plus(&q("1"), false).is_err());
}

#[test]
fn approximate_floats_are_rounded_as_go_rounds_them() {
    for (text, float) in [
        ("1.5", 1.5),
        ("0.3", 3.0 * 0.1),
        ("1Ki", 1024.0),
        ("-2k", -2000.0),
        ("1e40", 1e40),
        ("1e400", f64::INFINITY),
    ] {
        assert_eq!(q(text).approximate_float(), float, "{text}");
    }
}
