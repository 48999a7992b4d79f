/*
 * The @NAME@ plugin: serves the namespaced resource @PLURAL@ (kind @KIND@, group @GROUP@) in v1 with create, get,
 * list, watch, update, patch and delete, and its own kubectl get columns.
 *
 *   - The schema gives spec.message (a required string) and spec.replicas (an integer of at least 0, default 1); the
 *     server enforces it and applies its defaults before any hook runs.
 *   - Create and update: spec.message is trimmed, then must not be blank (422 Invalid otherwise).
 *   - kubectl get @PLURAL@ shows Name, Message, Replicas and Age.
 *
 * wit/world.wit names the exported interfaces; the server serves a verb exactly when the component exports the
 * interface behind it. The SDK is in sdk/ (see sdk/README.md); objects are cJSON trees.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "wasm_apiserver.h"

/* The OpenAPI v3 schema of a v1 @KIND@ (the server adds apiVersion, kind and metadata). Its example is what
 * `wasm-apiserver plugin check` runs every hook on. */
static const char schema[] =
    "{"
    "  \"type\": \"object\","
    "  \"description\": \"@KIND@ is an object of the @GROUP@ API. Describe what it stands for here.\","
    "  \"example\": {\"spec\": {\"message\": \"Hello from a @KIND@\", \"replicas\": 2}},"
    "  \"properties\": {"
    "    \"spec\": {"
    "      \"type\": \"object\","
    "      \"description\": \"The desired state of the @KIND@.\","
    "      \"required\": [\"message\"],"
    "      \"properties\": {"
    "        \"message\": {"
    "          \"type\": \"string\","
    "          \"maxLength\": 200,"
    "          \"description\": \"What the @KIND@ says. Required and not blank; leading and trailing spaces are removed.\""
    "        },"
    "        \"replicas\": {"
    "          \"type\": \"integer\","
    "          \"format\": \"int32\","
    "          \"minimum\": 0,"
    "          \"default\": 1,"
    "          \"description\": \"How many copies of the @KIND@ there should be. At least 0; defaults to 1.\""
    "        }"
    "      }"
    "    }"
    "  }"
    "}";

/* Removes leading and trailing spaces from the message (before validation, on create and update). */
static wa_status prepare(cJSON *obj) {
    const char *message = wa_get_string(obj, "spec.message", NULL);
    if (message == NULL)
        return WA_OK;
    size_t start = 0, end = strlen(message);
    while (start < end && isspace((unsigned char)message[start]))
        start++;
    while (end > start && isspace((unsigned char)message[end - 1]))
        end--;
    char *trimmed = malloc(end - start + 1);
    if (trimmed == NULL)
        wa_panic("out of memory");
    memcpy(trimmed, message + start, end - start);
    trimmed[end - start] = '\0';
    wa_set_path(obj, "spec.message", cJSON_CreateString(trimmed));
    free(trimmed);
    return WA_OK;
}

static wa_status prepare_for_update(cJSON *obj, const cJSON *old) {
    (void)old;
    return prepare(obj);
}

/* The field errors of a @KIND@: the message must not be blank. (Types, required, maxLength and minimum are the
 * schema's, checked by the server before this runs.) */
static void validate(const cJSON *obj, wa_errors *errs) {
    const char *message = wa_get_string(obj, "spec.message", "");
    bool blank = true;
    for (const char *c = message; *c != '\0'; c++)
        blank = blank && isspace((unsigned char)*c);
    if (blank)
        wa_required(errs, "spec.message", "a @KIND@ needs a message that is not blank");
}

static void validate_update(const cJSON *obj, const cJSON *old, wa_errors *errs) {
    (void)old;
    validate(obj, errs);
}

/* A @KIND@'s cells in kubectl get, one per column. */
static cJSON *row(const cJSON *obj) {
    cJSON *cells = cJSON_CreateArray();
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "metadata.name", "")));
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "spec.message", "")));
    const cJSON *replicas = wa_get_path(obj, "spec.replicas");
    cJSON_AddItemToArray(cells, replicas ? cJSON_Duplicate(replicas, true) : cJSON_CreateNull());
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "metadata.creationTimestamp", "")));
    return cells;
}

static const wa_resource resource = {
    .kind = "@KIND@",
    .plural = "@PLURAL@",
    .singular = "@SINGULAR@",
    .versions = (const wa_version[]){{.name = "v1", .served = true, .storage = true, .schema = schema}, {0}},
    .prepare_for_create = prepare,
    .validate = validate,
    .prepare_for_update = prepare_for_update,
    .validate_update = validate_update,
    .columns =
        (const wa_column[]){
            {.name = "Name", .type = "string", .format = "name", .description = "The object's name."},
            {.name = "Message", .type = "string", .description = "What the object says."},
            {.name = "Replicas", .type = "integer", .description = "How many copies there should be."},
            {.name = "Age", .type = "date", .description = "How long ago the object was created."},
            {0},
        },
    .row = row,
};

const wa_plugin wa_plugin_definition = {
    .group = "@GROUP@",
    .resources = (const wa_resource *const[]){&resource, NULL},
};
