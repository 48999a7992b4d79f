//! The wardle API types: the served versions `v1alpha1` and `v1beta1`, and the internal hub all versions convert
//! through (sample-apiserver's `pkg/apis/wardle`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use wasm_apiserver_guest::{Object, ObjectMeta};

/// The reference type naming a Flunder.
pub const FLUNDER_REFERENCE_TYPE: &str = "Flunder";
/// The reference type naming a Fischer.
pub const FISCHER_REFERENCE_TYPE: &str = "Fischer";

/// The internal (hub) version: what validation sees, whatever version a request uses.
pub mod hub {
    /// The specification of a Flunder.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    pub struct FlunderSpec {
        /// A name of another flunder, mutually exclusive to the fischer reference.
        pub flunder_reference: String,
        /// A name of a fischer, mutually exclusive to the flunder reference.
        pub fischer_reference: String,
        /// The reference type: `Flunder`, `Fischer` or empty.
        pub reference_type: String,
        /// The desired number of replicas (what `/scale` reads and writes), if set.
        pub replicas: Option<i64>,
    }
}

/// Version `v1alpha1`: the storage version of flunders and the only version of fischers.
pub mod v1alpha1 {
    use super::*;

    /// The version name.
    pub const VERSION: &str = "v1alpha1";

    /// The specification of a Flunder in `v1alpha1`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FlunderSpec {
        /// A name of another flunder or fischer, depending on the reference type.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub reference: String,
        /// The reference type, defaults to "Flunder" if reference is set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reference_type: Option<String>,
        /// The desired number of replicas.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub replicas: Option<i64>,
        /// Fields this type does not know, preserved as they came.
        #[serde(flatten)]
        pub extra: Map<String, Value>,
    }

    /// A Flunder in `v1alpha1`.
    pub type Flunder = Object<FlunderSpec>;

    /// A Fischer: a cluster-scoped object listing flunder names that may not be used.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Fischer {
        /// The API version.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub api_version: String,
        /// The kind, `Fischer`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub kind: String,
        /// The metadata.
        #[serde(default)]
        pub metadata: ObjectMeta,
        /// The names of flunders that are disallowed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub disallowed_flunders: Vec<String>,
        /// Fields this type does not know, preserved as they came.
        #[serde(flatten)]
        pub extra: Map<String, Value>,
    }
}

/// Version `v1beta1`: the preferred version of flunders.
pub mod v1beta1 {
    use super::*;

    /// The version name.
    pub const VERSION: &str = "v1beta1";

    /// The specification of a Flunder in `v1beta1`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FlunderSpec {
        /// A name of another flunder, mutually exclusive to the FischerReference.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub flunder_reference: String,
        /// A name of a fischer, mutually exclusive to the FlunderReference.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub fischer_reference: String,
        /// The reference type.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub reference_type: String,
        /// The desired number of replicas.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub replicas: Option<i64>,
        /// Fields this type does not know, preserved as they came.
        #[serde(flatten)]
        pub extra: Map<String, Value>,
    }

    /// A Flunder in `v1beta1`.
    pub type Flunder = Object<FlunderSpec>;
}
