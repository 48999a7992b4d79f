/*
 * The widgets plugin, in C: one namespaced resource, Widget (widgets.example.com/v1, short name wd), with
 * defaulting, validation on create and update, a field selector and table columns, written with the C SDK
 * (guest-sdk/c).
 *
 *   spec.color   required; red, green or blue; immutable
 *   spec.size    1 to 100; 10 by default
 *   spec.label   at most 32 bytes; its surrounding spaces are trimmed on create
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
      "}"
    "},"
    "\"example\": {\"apiVersion\": \"widgets.example.com/v1\", \"kind\": \"Widget\","
      "\"metadata\": {\"name\": \"w\", \"namespace\": \"default\"},"
      "\"spec\": {\"color\": \"green\", \"size\": 3, \"label\": \"a small one\"}}"
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

static void validate(const cJSON *obj, wa_errors *errs) {
    const cJSON *color = wa_get_path(obj, "spec.color");
    if (!cJSON_IsString(color) || color->valuestring[0] == '\0') {
        wa_required(errs, "spec.color", "a widget has a color");
    } else {
        misbehave(color->valuestring);
        bool known = false;
        for (size_t i = 0; colors[i] != NULL; i++)
            known = known || strcmp(colors[i], color->valuestring) == 0;
        if (!known)
            wa_not_supported(errs, "spec.color", color, colors);
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
    const char *color = wa_get_string(obj, "spec.color", "");
    if (strcmp(color, wa_get_string(old, "spec.color", "")) != 0)
        wa_invalid_string(errs, "spec.color", color, "field is immutable");
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
    .versions = (const wa_version[]){{.name = "v1", .served = true, .storage = true, .schema = schema}, {0}},
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
};

const wa_plugin wa_plugin_definition = {
    .group = "widgets.example.com",
    .resources = (const wa_resource *const[]){&widgets, NULL},
};
