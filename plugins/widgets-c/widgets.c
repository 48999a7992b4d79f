/*
 * The widgets plugin, in C, written with the C SDK (guest-sdk/c):
 *
 * Widget (widgets.example.com, namespaced, short name wd) in v1 (preferred, stored) and v1beta1 (deprecated, with
 * spec.colour for spec.color; converted by the plugin), with defaulting, validation on create and update, a field
 * selector, table columns, /status and /scale (on spec.size):
 *
 *   spec.color   required; red, green or blue; immutable
 *   spec.size    1 to 100; 10 by default
 *   spec.label   at most 32 bytes; its surrounding spaces are trimmed on create
 *   status.ready a boolean; status.size an integer of at least 0
 *
 * Palette (cluster-scoped, short name pal): spec.banned lists colors. A validating admission hook reads the palettes
 * through the host and refuses a widget whose color one of them bans (403), and warns about a label saying TODO.
 *
 * Three colours show the sandbox at work: "loop!" spins until the CPU deadline stops it (504), "abort!" panics
 * (500 naming the plugin and the hook), "allocate!" allocates until the memory cap stops it (500).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "wasm_apiserver.h"

enum { MAX_LABEL = 32, MIN_SIZE = 1, MAX_SIZE = 100, DEFAULT_SIZE = 10 };

static const char *const colors[] = {"red", "green", "blue", NULL};

#define STATUS_SCHEMA                                                                                                  \
    "{\"type\": \"object\", \"properties\": {"                                                                       \
    "\"ready\": {\"type\": \"boolean\"}, \"size\": {\"type\": \"integer\"}}}"

static const char schema[] = "{"
    "\"type\": \"object\","
    "\"properties\": {"
      "\"spec\": {"
        "\"type\": \"object\","
        "\"description\": \"What the widget is.\","
        "\"required\": [\"color\"],"
        "\"properties\": {"
          "\"color\": {\"type\": \"string\", \"description\": \"red, green or blue (immutable).\"},"
          "\"size\": {\"type\": \"integer\", \"description\": \"1 to 100 (10 by default).\"},"
          "\"label\": {\"type\": \"string\", \"description\": \"At most 32 bytes.\"}"
        "}"
      "},"
      "\"status\": " STATUS_SCHEMA
    "},"
    "\"example\": {\"apiVersion\": \"widgets.example.com/v1\", \"kind\": \"Widget\","
      "\"metadata\": {\"name\": \"w\", \"namespace\": \"default\"},"
      "\"spec\": {\"color\": \"green\", \"size\": 3, \"label\": \"a small one\"}}"
  "}";

static const char schema_v1beta1[] = "{"
    "\"type\": \"object\","
    "\"properties\": {"
      "\"spec\": {"
        "\"type\": \"object\","
        "\"required\": [\"colour\"],"
        "\"properties\": {"
          "\"colour\": {\"type\": \"string\", \"description\": \"red, green or blue (immutable).\"},"
          "\"size\": {\"type\": \"integer\"},"
          "\"label\": {\"type\": \"string\"}"
        "}"
      "},"
      "\"status\": " STATUS_SCHEMA
    "},"
    "\"example\": {\"spec\": {\"colour\": \"blue\", \"size\": 4}}"
  "}";

static const char palette_schema[] = "{"
    "\"type\": \"object\","
    "\"properties\": {"
      "\"spec\": {"
        "\"type\": \"object\","
        "\"properties\": {"
          "\"banned\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, "
            "\"description\": \"Colors a widget may not have.\"}"
        "}"
      "}"
    "}"
  "}";

/* Sets spec.size to 10 when it is absent. */
static void set_defaults(cJSON *obj) {
    if (wa_get_path(obj, "spec.size") == NULL)
        wa_set_path(obj, "spec.size", cJSON_CreateNumber(DEFAULT_SIZE));
}

/* Trims the label's surrounding spaces. */
static wa_status prepare_for_create(cJSON *obj) {
    const char *label = wa_get_string(obj, "spec.label", NULL);
    if (label == NULL)
        return WA_OK;
    size_t start = 0, end = strlen(label);
    while (start < end && isspace((unsigned char)label[start]))
        start++;
    while (end > start && isspace((unsigned char)label[end - 1]))
        end--;
    char *trimmed = malloc(end - start + 1);
    if (trimmed == NULL)
        wa_panic("out of memory");
    memcpy(trimmed, label + start, end - start);
    trimmed[end - start] = '\0';
    wa_set_path(obj, "spec.label", cJSON_CreateString(trimmed));
    free(trimmed);
    return WA_OK;
}

/* What "allocate!" allocates, so that the compiler keeps the allocations. */
static char *volatile kept;

/* The hostile colours: each shows what the host does to a plugin that misbehaves. */
static void misbehave(const char *color) {
    if (strcmp(color, "loop!") == 0) {
        for (volatile unsigned long n = 0;; n++) {
        }
    }
    if (strcmp(color, "abort!") == 0)
        wa_panic("asked to: spec.color is %s", color);
    if (strcmp(color, "allocate!") == 0) {
        for (;;) {
            char *block = malloc(1 << 20);
            if (block == NULL)
                wa_panic("out of memory");
            memset(block, 1, 1 << 20);
            kept = block;
        }
    }
}

/* The path of the color in an object's version (hooks get objects in the version of the request). */
static const char *color_path(const cJSON *obj) {
    const char *api_version = wa_get_string(obj, "apiVersion", "");
    size_t n = strlen(api_version);
    return n >= 8 && strcmp(api_version + n - 8, "/v1beta1") == 0 ? "spec.colour" : "spec.color";
}

static void validate(const cJSON *obj, wa_errors *errs) {
    const char *path = color_path(obj);
    const cJSON *color = wa_get_path(obj, path);
    if (!cJSON_IsString(color) || color->valuestring[0] == '\0') {
        wa_required(errs, path, "a widget has a color");
    } else {
        misbehave(color->valuestring);
        bool known = false;
        for (size_t i = 0; colors[i] != NULL; i++)
            known = known || strcmp(colors[i], color->valuestring) == 0;
        if (!known)
            wa_not_supported(errs, path, color, colors);
    }
    const cJSON *size = wa_get_path(obj, "spec.size");
    if (cJSON_IsNumber(size) && (size->valuedouble < MIN_SIZE || size->valuedouble > MAX_SIZE))
        wa_invalid(errs, "spec.size", size, "must be between %d and %d", MIN_SIZE, MAX_SIZE);
    const char *label = wa_get_string(obj, "spec.label", "");
    if (strlen(label) > MAX_LABEL)
        wa_too_long(errs, "spec.label", MAX_LABEL);
}

/* An update is validated as a create, and the color may not change. */
static void validate_update(const cJSON *obj, const cJSON *old, wa_errors *errs) {
    validate(obj, errs);
    const char *color = wa_get_string(obj, color_path(obj), "");
    if (strcmp(color, wa_get_string(old, color_path(old), "")) != 0)
        wa_invalid_string(errs, color_path(obj), color, "field is immutable");
}

/* A status update: status.size may not be negative. */
static void validate_status_update(const cJSON *obj, const cJSON *old, wa_errors *errs) {
    (void)old;
    const cJSON *size = wa_get_path(obj, "status.size");
    if (cJSON_IsNumber(size) && size->valuedouble < 0)
        wa_invalid(errs, "status.size", size, "must be 0 or more");
}

/* v1 <-> v1beta1: spec.color is spec.colour in v1beta1. */
static wa_status convert(cJSON *obj, const char *to_version) {
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
    if (!cJSON_IsObject(spec))
        return WA_OK;
    const char *from = strcmp(to_version, "v1beta1") == 0 ? "color" : "colour";
    const char *to = strcmp(to_version, "v1beta1") == 0 ? "colour" : "color";
    if (strcmp(to_version, "v1") != 0 && strcmp(to_version, "v1beta1") != 0)
        return wa_bad_request("widgets have no version %s", to_version);
    cJSON *value = cJSON_DetachItemFromObjectCaseSensitive(spec, from);
    if (value != NULL)
        cJSON_AddItemToObject(spec, to, value);
    return WA_OK;
}

/* Refuses a widget whose color a palette bans (read through the host), and warns about a label saying TODO. */
static wa_status validate_admission(const wa_admission_request *request, wa_errors *warnings) {
    if (request->object == NULL || strcmp(request->resource, "widgets") != 0)
        return WA_OK;
    const char *color = wa_get_string(request->object, color_path(request->object), "");
    cJSON *palettes = NULL;
    wa_status status = wa_host_list("widgets.example.com", "palettes", NULL, "", &palettes);
    if (status != WA_OK)
        return status;
    const cJSON *palette;
    cJSON_ArrayForEach(palette, palettes) {
        const cJSON *banned;
        cJSON_ArrayForEach(banned, wa_get_path(palette, "spec.banned")) {
            if (cJSON_IsString(banned) && strcmp(banned->valuestring, color) == 0) {
                status = wa_forbidden("the color %s is banned by the palette %s", color,
                                      wa_get_string(palette, "metadata.name", ""));
                break;
            }
        }
        if (status != WA_OK)
            break;
    }
    cJSON_Delete(palettes);
    if (status == WA_OK && strstr(wa_get_string(request->object, "spec.label", ""), "TODO") != NULL)
        wa_warning(warnings, "the label of %s says TODO", request->name);
    return status;
}

/* A palette's cells: its name, banned colors and age. */
static cJSON *palette_row(const cJSON *obj) {
    cJSON *cells = cJSON_CreateArray();
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "metadata.name", "")));
    char banned[256] = "";
    const cJSON *color;
    cJSON_ArrayForEach(color, wa_get_path(obj, "spec.banned")) {
        if (cJSON_IsString(color) && strlen(banned) + strlen(color->valuestring) + 2 < sizeof(banned)) {
            if (banned[0] != '\0')
                strcat(banned, ",");
            strcat(banned, color->valuestring);
        }
    }
    cJSON_AddItemToArray(cells, cJSON_CreateString(banned));
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "metadata.creationTimestamp", "")));
    return cells;
}

/* A widget's cells: its name, color, size and age. */
static cJSON *row(const cJSON *obj) {
    cJSON *cells = cJSON_CreateArray();
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "metadata.name", "")));
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "spec.color", "")));
    const cJSON *size = wa_get_path(obj, "spec.size");
    cJSON_AddItemToArray(cells, cJSON_IsNumber(size) ? cJSON_CreateNumber(size->valuedouble) : cJSON_CreateNull());
    cJSON_AddItemToArray(cells, cJSON_CreateString(wa_get_string(obj, "metadata.creationTimestamp", "")));
    return cells;
}

static const wa_resource widgets = {
    .kind = "Widget",
    .plural = "widgets",
    .singular = "widget",
    .short_names = (const char *const[]){"wd", NULL},
    .versions =
        (const wa_version[]){
            {.name = "v1", .served = true, .storage = true, .schema = schema},
            {.name = "v1beta1", .served = true, .deprecated = true, .schema = schema_v1beta1},
            {0},
        },
    .set_defaults = set_defaults,
    .prepare_for_create = prepare_for_create,
    .validate = validate,
    .validate_update = validate_update,
    .selectable_fields = (const char *const[]){"spec.color", NULL},
    .columns =
        (const wa_column[]){
            {.name = "Name", .type = "string", .format = "name", .description = "The widget's name."},
            {.name = "Color", .type = "string", .description = "red, green or blue."},
            {.name = "Size", .type = "integer", .description = "1 to 100."},
            {.name = "Age", .type = "date", .description = "How long ago it was created."},
            {0},
        },
    .row = row,
    .status_subresource = true,
    .validate_status_update = validate_status_update,
    .scale = &(const wa_scale_paths){.spec_replicas_path = ".spec.size", .status_replicas_path = ".status.size"},
    .convert = convert,
};

static const wa_resource palettes = {
    .kind = "Palette",
    .plural = "palettes",
    .singular = "palette",
    .short_names = (const char *const[]){"pal", NULL},
    .cluster_scoped = true,
    .versions = (const wa_version[]){{.name = "v1", .served = true, .storage = true, .schema = palette_schema}, {0}},
    .columns =
        (const wa_column[]){
            {.name = "Name", .type = "string", .format = "name", .description = "The palette's name."},
            {.name = "Banned", .type = "string", .description = "The colors it bans."},
            {.name = "Age", .type = "date", .description = "How long ago it was created."},
            {0},
        },
    .row = palette_row,
};

const wa_plugin wa_plugin_definition = {
    .group = "widgets.example.com",
    .resources = (const wa_resource *const[]){&widgets, &palettes, NULL},
    .reads = (const wa_group_resource[]){{.group = "widgets.example.com", .resource = "palettes"}, {0}},
    .validating_rules =
        (const wa_admission_rule[]){
            {.group = "widgets.example.com", .resources = (const char *const[]){"widgets", NULL},
             .operations = WA_CREATE | WA_UPDATE},
            {0},
        },
    .validate_admission = validate_admission,
};
