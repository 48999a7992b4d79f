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
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "{s:?} has an unknown suffix {suffix:?} (m, k, M, G, T, Ki, Mi, Gi, Ti)"
            ))
        }
    };
    if !number.is_finite() {
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
