//! The options every write takes (`?dryRun=`, `?fieldValidation=`): the store's, and those of the controllers that
//! write through it (the garbage collector, the namespace controller).

/// How unknown fields are treated (`?fieldValidation=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the default).
    Warn,
    /// Fail the request.
    Strict,
}

/// Options common to writes.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// `dryRun=All`: do everything but store.
    pub dry_run: bool,
    /// Unknown-field handling.
    pub field_validation: FieldValidation,
}
