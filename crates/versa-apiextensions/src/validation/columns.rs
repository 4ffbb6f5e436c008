//! `additionalPrinterColumns`: the extra columns of `kubectl get`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
use versa_schema::field::{Error, ErrorList, Path};

use super::subresources::validate_simple_json_path;

/// The column types a Table can render, sorted as upstream lists them in messages.
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
/// The column formats, sorted.
const COLUMN_FORMATS: [&str; 8] = ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];

/// Validates one printer column.
pub(super) fn validate_column(col: &CustomResourceColumnDefinition, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if col.name.is_empty() {
        errs.push(Error::required(path.child("name"), ""));
    }
    let types = format!("must be one of {}", COLUMN_TYPES.join(","));
    if col.type_.is_empty() {
        errs.push(Error::required(path.child("type"), types));
    } else if !COLUMN_TYPES.contains(&col.type_.as_str()) {
        errs.push(Error::invalid(path.child("type"), col.type_.as_str(), types));
    }
    let format = col.format.as_deref().unwrap_or_default();
    if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
        errs.push(Error::invalid(path.child("format"), format, format!("must be one of {}", COLUMN_FORMATS.join(","))));
    }
    // kube-apiserver names this field `JSONPath` (its internal Go name); versa uses the name the
    // user wrote.
    let json_path = path.child("jsonPath");
    if col.json_path.is_empty() {
        errs.push(Error::required(json_path, ""));
    } else {
        errs.extend(validate_simple_json_path(&col.json_path, &json_path));
    }
    errs
}
