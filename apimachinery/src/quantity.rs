//! Kubernetes quantities (`500m`, `1.5`, `10Ki`, `2M`, `1Gi`), read as numbers: tenant limits, ResourceQuota hard
//! limits and usage. (The CEL quantity library has its own exact arithmetic, `schema::cel`.)

/// Parses a Kubernetes quantity: a decimal number with an optional suffix (m, k, M, G, T, Ki, Mi, Gi, Ti).
pub fn parse(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a quantity such as 500m or 10Mi"))?;
    let binary = |power: i32| 1024f64.powi(power);
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        // A decimal exponent (`1e3`, `2E-2`).
        exponent if exponent.starts_with(['e', 'E']) => {
            let power: i32 = exponent[1..]
                .parse()
                .map_err(|_| format!("{s:?} is not a quantity such as 500m or 10Mi"))?;
            10f64.powi(power)
        }
        _ => {
            return Err(format!(
                "{s:?} has an unknown suffix {suffix:?} (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent)"
            ))
        }
    };
    if !number.is_finite() || !(number * factor).is_finite() {
        return Err(format!("{s:?} is not a finite quantity"));
    }
    Ok(number * factor)
}

/// A quantity as a JSON value holds it: a string, or a number.
pub fn of_json(v: &serde_json::Value) -> Result<f64, String> {
    match v {
        serde_json::Value::Number(n) => n.as_f64().ok_or_else(|| "not a number".into()),
        serde_json::Value::String(s) => parse(s),
        _ => Err("must be a number or a quantity such as 500m or 10Mi".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn quantities_read_as_kube_writes_them() {
        assert_eq!(parse("500m").unwrap(), 0.5);
        assert_eq!(parse("2k").unwrap(), 2000.0);
        assert_eq!(parse("1e3").unwrap(), 1000.0);
        assert_eq!(parse("1Pi").unwrap(), 1024f64.powi(5));
        assert!((parse("100n").unwrap() - 100e-9).abs() < 1e-15);
        for bad in ["", "1x", "1e400", "e3", "nan"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
