//! Parsing kubectl's column-aligned tables (`kubectl get`, `kubectl api-resources`).

use std::collections::BTreeMap;

/// Parses a table printed by kubectl into one map per row, keyed by column header.
///
/// kubectl aligns columns with at least three spaces between them, and headers may contain single spaces
/// (`REFERENCE TYPE`), so a column starts at the header's first character and at every non-space character that
/// follows two or more spaces; each row is cut at those offsets. Lines that are empty are skipped.
pub fn parse_table(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines().filter(|line| !line.trim().is_empty());
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let starts = column_starts(header);
    let columns: Vec<(String, usize, Option<usize>)> = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| {
            let end = starts.get(i + 1).copied();
            (cell(header, start, end), start, end)
        })
        .collect();
    lines
        .map(|line| {
            columns
                .iter()
                .map(|(name, start, end)| (name.clone(), cell(line, *start, *end)))
                .collect()
        })
        .collect()
}

/// The byte offsets at which the columns of `header` start.
fn column_starts(header: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut spaces = 0usize;
    for (offset, c) in header.char_indices() {
        if c == ' ' {
            spaces += 1;
            continue;
        }
        if starts.is_empty() || spaces >= 2 {
            starts.push(offset);
        }
        spaces = 0;
    }
    starts
}

/// The trimmed text of `line` between `start` and `end` (or the end of the line); empty when out of range.
fn cell(line: &str, start: usize, end: Option<usize>) -> String {
    let end = end.unwrap_or(line.len()).min(line.len());
    line.get(start.min(end)..end).unwrap_or("").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_header_offsets_and_keeps_multi_word_headers_and_empty_cells() {
        let text = "\
NAME       SHORTNAMES   APIVERSION                    NAMESPACED   KIND
fischers                wardle.example.com/v1alpha1   false        Fischer
flunders   fl           wardle.example.com/v1beta1    true         Flunder
";
        let rows = parse_table(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["NAME"], "fischers");
        assert_eq!(rows[0]["SHORTNAMES"], "");
        assert_eq!(rows[0]["NAMESPACED"], "false");
        assert_eq!(rows[1]["SHORTNAMES"], "fl");
        assert_eq!(rows[1]["KIND"], "Flunder");

        let rows = parse_table("NAME   REFERENCE TYPE   CREATED AT\nx      Flunder          2026-01-01T00:00:00Z\n");
        assert_eq!(rows[0]["REFERENCE TYPE"], "Flunder");
        assert_eq!(rows[0]["CREATED AT"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn empty_input_has_no_rows() {
        assert!(parse_table("").is_empty());
        assert!(parse_table("NAME   AGE\n").is_empty());
    }
}
