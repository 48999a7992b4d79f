//! The columns of `kubectl get flunders` and `kubectl get fischers`.

use serde_json::{json, Value};
use wasm_apiserver_guest::{decode, encode, Error, ObjectMeta};

use crate::exports::wasm_apiserver::plugin::table_convertor::Column;
use crate::types::v1alpha1;
use crate::{FISCHERS, FLUNDERS};

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although \
    some resources may allow a client to request the generation of an appropriate name automatically. Name is \
    primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: \
    https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

const CREATED_AT_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object \
    was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not \
    set this value. It is represented in RFC3339 form and is in UTC.";

/// The columns of a resource's table; unknown resources get Name and Created At.
pub fn columns(resource: &str) -> Vec<Column> {
    let mut columns = vec![column("Name", "string", "name", NAME_DESCRIPTION)];
    match resource {
        FLUNDERS => {
            columns.push(column("Reference Type", "string", "", "The reference type."));
            columns.push(column(
                "Reference",
                "string",
                "",
                "The name of the referenced flunder or fischer.",
            ));
        }
        FISCHERS => {
            columns.push(column(
                "Disallowed Flunders",
                "string",
                "",
                "The names of flunders that are disallowed.",
            ));
        }
        _ => {}
    }
    columns.push(column("Created At", "date", "", CREATED_AT_DESCRIPTION));
    columns
}

/// The cells of one row, as a JSON array, for an object in the storage version.
pub fn row(resource: &str, object: &str) -> Result<String, Error> {
    let cells = match resource {
        FLUNDERS => {
            let object = &crate::conversion::from_storage_version(object)?;
            let flunder: v1alpha1::Flunder = decode(object)?;
            let reference_type = flunder.spec.reference_type.as_deref().unwrap_or_default();
            vec![
                json!(flunder.metadata.name()),
                json!(reference_type),
                json!(flunder.spec.reference),
                created_at(&flunder.metadata),
            ]
        }
        FISCHERS => {
            let fischer: v1alpha1::Fischer = decode(object)?;
            vec![
                json!(fischer.metadata.name()),
                json!(fischer.disallowed_flunders.join(",")),
                created_at(&fischer.metadata),
            ]
        }
        other => return Err(crate::unknown_resource(other)),
    };
    encode(&cells)
}

fn column(name: &str, type_: &str, format: &str, description: &str) -> Column {
    Column {
        name: name.to_owned(),
        type_: type_.to_owned(),
        format: format.to_owned(),
        description: description.to_owned(),
        priority: 0,
    }
}

fn created_at(metadata: &ObjectMeta) -> Value {
    metadata.creation_timestamp.as_deref().map_or(Value::Null, |t| json!(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(resource: &str) -> Vec<String> {
        columns(resource).into_iter().map(|c| c.name).collect()
    }

    #[test]
    fn columns_per_resource() {
        assert_eq!(names(FLUNDERS), ["Name", "Reference Type", "Reference", "Created At"]);
        assert_eq!(names(FISCHERS), ["Name", "Disallowed Flunders", "Created At"]);
        let flunder_columns = columns(FLUNDERS);
        assert_eq!(
            (flunder_columns[0].type_.as_str(), flunder_columns[0].format.as_str()),
            ("string", "name")
        );
        assert_eq!(flunder_columns[3].type_, "date");
    }

    #[test]
    fn rows_match_the_columns() {
        let flunder = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "a", "creationTimestamp": "2024-05-06T07:08:09Z"},
            "spec": {"reference": "b", "referenceType": "Fischer"}, "status": {}});
        let cells: Value = serde_json::from_str(&row(FLUNDERS, &flunder.to_string()).expect("row")).expect("json");
        assert_eq!(cells, json!(["a", "Fischer", "b", "2024-05-06T07:08:09Z"]));

        let fischer = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Fischer",
            "metadata": {"name": "f"}, "disallowedFlunders": ["x", "y"]});
        let cells: Value = serde_json::from_str(&row(FISCHERS, &fischer.to_string()).expect("row")).expect("json");
        assert_eq!(cells, json!(["f", "x,y", null]));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(row(FLUNDERS, "[").is_err());
        assert!(row("widgets", "{}").is_err());
    }
}
