/*
 * The C SDK of wasm-apiserver plugins: a plugin serves an API group whose resources' objects are JSON (cJSON
 * trees), with hooks as k8s.io/apiserver's strategies have them (defaulting, prepare-for-create and -update,
 * validation, field selectors, table columns, /status, /scale, conversion, admission), built with clang for
 * wasm32-wasi into a component by build-plugin.sh.
 *
 * A plugin defines one `wa_plugin` named `wa_plugin_definition`:
 *
 *     static void validate(const cJSON *obj, wa_errors *errs) {
 *         const cJSON *size = wa_get_path(obj, "spec.size");
 *         if (!cJSON_IsNumber(size))
 *             wa_required(errs, "spec.size", "a widget has a size");
 *     }
 *     static const wa_resource widgets = { .kind = "Widget", .plural = "widgets", .singular = "widget",
 *         .versions = (const wa_version[]){ { .name = "v1", .served = true, .storage = true, .schema = SCHEMA }, {0} },
 *         .validate = validate };
 *     const wa_plugin wa_plugin_definition = { .group = "widgets.example.com",
 *         .resources = (const wa_resource *const[]){ &widgets, NULL } };
 *
 * Hooks get the object as a cJSON tree. Those that change it (default, prepare...) change it in place; the SDK
 * writes it back. Validators add field errors to `errs`. Hooks that may fail return WA_OK or the result of one of
 * the wa_fail functions (wa_forbidden, wa_bad_request...), which also record the message.
 *
 * Memory: every string and tree the SDK gives a hook is the SDK's, freed after the hook returns; a hook that keeps
 * something copies it. A call runs to its end before the next begins (no threads).
 */
#ifndef WASM_APISERVER_H
#define WASM_APISERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cJSON.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Errors ---------------------------------------------------------------------------------------------------- */

/* What a hook that may fail returns: WA_OK, or the reason of the Kubernetes Status the server answers with. */
typedef enum wa_status {
    WA_OK = 0,
    /* 403 Forbidden: the operation is not allowed. */
    WA_FORBIDDEN,
    /* 400 BadRequest. */
    WA_BAD_REQUEST,
    /* 409 Conflict. */
    WA_CONFLICT,
    /* 404 NotFound: something the operation needs does not exist. */
    WA_NOT_FOUND,
    /* 500 InternalError: the plugin failed. */
    WA_INTERNAL,
    /* 422 Invalid: with field errors as causes (wa_invalid_object). */
    WA_INVALID,
} wa_status;

/* Each records the message (printf-style) for the answer and returns its status: `return wa_forbidden("...");`. */
wa_status wa_forbidden(const char *format, ...) __attribute__((format(printf, 1, 2)));
wa_status wa_bad_request(const char *format, ...) __attribute__((format(printf, 1, 2)));
wa_status wa_conflict(const char *format, ...) __attribute__((format(printf, 1, 2)));
wa_status wa_not_found(const char *format, ...) __attribute__((format(printf, 1, 2)));
wa_status wa_internal(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Logs the message at error level and stops the plugin (a trap): the server answers 500 naming the plugin and the
 * hook, with this message, and replaces the instance. For bugs, as Go's panic. */
_Noreturn void wa_panic(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* ---- Field errors (as k8s.io/apimachinery's field package) ------------------------------------------------------ */

/* A validation's field errors; none means valid. */
typedef struct wa_errors wa_errors;

/* Paths are dotted, with indices and keys as Kubernetes prints them: "spec.ports[0].name", "metadata.labels[app]".
 * Values (`value`, may be NULL) are printed as JSON before the detail: `"blue": must be red or green`. */
void wa_required(wa_errors *errs, const char *path, const char *detail);
void wa_invalid(wa_errors *errs, const char *path, const cJSON *value, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
/* wa_invalid with a string or integer value. */
void wa_invalid_string(wa_errors *errs, const char *path, const char *value, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
void wa_invalid_int(wa_errors *errs, const char *path, int64_t value, const char *format, ...)
    __attribute__((format(printf, 4, 5)));
/* The value is not one of `supported` (NULL-terminated). */
void wa_not_supported(wa_errors *errs, const char *path, const cJSON *value, const char *const *supported);
void wa_duplicate(wa_errors *errs, const char *path, const cJSON *value);
void wa_forbidden_field(wa_errors *errs, const char *path, const char *detail);
void wa_too_long(wa_errors *errs, const char *path, size_t max_bytes);
void wa_too_many(wa_errors *errs, const char *path, size_t actual, size_t max_items);
/* How many errors so far. */
size_t wa_error_count(const wa_errors *errs);
/* A warning for the client (kubectl prints it), with a valid object. */
void wa_warning(wa_errors *errs, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* For a hook that may fail: answer 422 Invalid with the field errors in `errs` (a list made by wa_errors_new). */
wa_errors *wa_errors_new(void);
wa_status wa_invalid_object(wa_errors *errs);

/* ---- JSON helpers ---------------------------------------------------------------------------------------------- */

/* The member at a dotted path of plain names ("spec.size"), or NULL. */
const cJSON *wa_get_path(const cJSON *obj, const char *path);
/* The string at a path, or `otherwise` when it is missing or not a string. */
const char *wa_get_string(const cJSON *obj, const char *path, const char *otherwise);
/* Sets the member at a dotted path (making the objects on the way), taking `value`; false when a member on the way
 * is not an object (value is then freed). */
bool wa_set_path(cJSON *obj, const char *path, cJSON *value);

/* ---- The host ---------------------------------------------------------------------------------------------------- */

typedef enum wa_log_level { WA_TRACE, WA_DEBUG, WA_INFO, WA_WARN, WA_ERROR } wa_log_level;

/* Logs into the server's log under the plugin's name; when the call fails, the client's message carries the last
 * error line. */
void wa_log(wa_log_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Reads one object of a resource the plugin declared in `reads` (namespace NULL for a cluster-scoped one): the
 * object in *out (the caller's, cJSON_Delete it), or NULL when there is none. */
wa_status wa_host_get(const char *group, const char *resource, const char *namespace_, const char *name, cJSON **out);
/* Lists the objects of a resource the plugin declared in `reads` (namespace NULL for every namespace) matching a
 * label selector ("" for all): a JSON array in *out (the caller's). */
wa_status wa_host_list(const char *group, const char *resource, const char *namespace_, const char *label_selector,
                       cJSON **out);

/* ---- What a plugin serves -------------------------------------------------------------------------------------- */

/* One version of a resource; a list of them ends with one whose name is NULL. */
typedef struct wa_version {
    const char *name;
    bool served;
    /* The version objects are stored in: exactly one of a resource's versions. */
    bool storage;
    bool deprecated;
    const char *deprecation_warning;
    /* The OpenAPI v3 schema of the object, as JSON (`type: object` with spec, status...; the host adds apiVersion,
     * kind and metadata). An `example` object in it is what `wasm-apiserver plugin check` runs the hooks on. */
    const char *schema;
} wa_version;

/* A column of kubectl get's table, as Kubernetes' TableColumnDefinition; a list ends with a NULL name. A column
 * named Age of type date shows the age of the RFC 3339 timestamp its cells hold. */
typedef struct wa_column {
    const char *name;
    /* string, integer, number, boolean or date. */
    const char *type;
    const char *format;
    const char *description;
    /* 0: always shown; higher: -o wide only. */
    int32_t priority;
} wa_column;

/* Where an object keeps its replica counts for /scale: paths such as ".spec.replicas". */
typedef struct wa_scale_paths {
    const char *spec_replicas_path;
    const char *status_replicas_path;
    /* NULL: none. */
    const char *label_selector_path;
} wa_scale_paths;

/* A resource and its hooks, each optional (NULL). Objects are in the version of the request (conversion: their
 * apiVersion names it), except for delete, field selectors and rows: the storage version. */
typedef struct wa_resource {
    const char *kind, *plural, *singular;
    /* NULL-terminated lists, or NULL. */
    const char *const *short_names;
    const char *const *categories;
    bool cluster_scoped;
    /* Most preferred first; ends with a NULL name. */
    const wa_version *versions;

    /* Sets defaults on an object read from a request or from storage. */
    void (*set_defaults)(cJSON *obj);
    /* Changes a new object before it is validated (clear status, set fields). */
    wa_status (*prepare_for_create)(cJSON *obj);
    /* Checks a new object. */
    void (*validate)(const cJSON *obj, wa_errors *errs);
    /* Changes an updated object, knowing the stored one. */
    wa_status (*prepare_for_update)(cJSON *obj, const cJSON *old);
    /* Checks an update. */
    void (*validate_update)(const cJSON *obj, const cJSON *old, wa_errors *errs);
    /* May refuse a deletion (wa_forbidden, wa_conflict...). */
    wa_status (*validate_delete)(const cJSON *obj);
    /* The fields a field selector may name besides metadata.name and metadata.namespace, as dotted paths of
     * scalar members ("spec.color"); NULL-terminated. The SDK reads their values. */
    const char *const *selectable_fields;
    /* A PUT of an object that does not exist creates it. */
    bool allow_create_on_update;
    /* A PUT must name the resourceVersion it replaces. */
    bool require_resource_version_on_update;

    /* kubectl get's columns (needs the world to export table-convertor), and an object's cells: a JSON array with
     * one value per column (the SDK frees it). */
    const wa_column *columns;
    cJSON *(*row)(const cJSON *obj);

    /* /status (status-strategy): a status update keeps only the object's status, after the two optional hooks. */
    bool status_subresource;
    wa_status (*prepare_for_status_update)(cJSON *obj, const cJSON *old);
    void (*validate_status_update)(const cJSON *obj, const cJSON *old, wa_errors *errs);

    /* /scale (scaler): where the replica counts are; NULL for none. */
    const wa_scale_paths *scale;

    /* Converts an object in place from the version its apiVersion names to `to_version` (converter); the SDK then
     * sets apiVersion. Metadata must be left as it is. */
    wa_status (*convert)(cJSON *obj, const char *to_version);
} wa_resource;

/* A resource of the tenant the plugin reads through wa_host_get and wa_host_list; a list ends with a NULL group. */
typedef struct wa_group_resource {
    const char *group;
    const char *resource;
} wa_group_resource;

/* Operations an admission rule names (or'ed). */
enum { WA_CREATE = 1, WA_UPDATE = 2, WA_DELETE = 4 };

/* Which requests an admission hook sees; a list ends with a NULL group. */
typedef struct wa_admission_rule {
    /* "*" for any. */
    const char *group;
    /* Plural names ("*" for any; "flunders/status" for a subresource), NULL-terminated. */
    const char *const *resources;
    int operations;
} wa_admission_rule;

/* What an admission hook is told. */
typedef struct wa_admission_request {
    /* WA_CREATE, WA_UPDATE or WA_DELETE. */
    int operation;
    const char *group, *version, *resource, *subresource;
    /* NULL for a cluster-scoped resource. */
    const char *namespace_;
    const char *name;
    /* The object being written, NULL for a delete; the stored one for an update or a delete. */
    cJSON *object;
    const cJSON *old_object;
    bool dry_run;
    const char *user_name;
} wa_admission_request;

typedef struct wa_plugin {
    /* The API group, such as widgets.example.com. */
    const char *group;
    /* NULL-terminated. */
    const wa_resource *const *resources;
    /* What the plugin reads (any other read is refused); NULL for nothing. */
    const wa_group_resource *reads;

    /* Mutating admission (the world exports mutating-admission): the requests it sees, and the hook, which may
     * change request->object in place (*changed = true) or refuse the request. */
    const wa_admission_rule *mutating_rules;
    wa_status (*admit)(wa_admission_request *request, bool *changed);
    /* Validating admission (validating-admission): warnings go to `errs` (wa_warning); an error status refuses. */
    const wa_admission_rule *validating_rules;
    wa_status (*validate_admission)(const wa_admission_request *request, wa_errors *warnings);
} wa_plugin;

/* The plugin: defined once, by the plugin. */
extern const wa_plugin wa_plugin_definition;

#ifdef __cplusplus
}
#endif

#endif
