"""``@GROUP@``: a wasm-apiserver plugin in Python serving the namespaced resource ``@PLURAL@`` (kind @KIND@) in ``v1``
with create, get, list, watch, update, patch and delete, and its own ``kubectl get`` columns.

- The schema (:data:`SCHEMA`) gives ``spec.message`` (a required string) and ``spec.replicas`` (an integer of at least
  0, default 1); the server enforces it and applies its defaults before any hook runs.
- Create and update: ``spec.message`` is trimmed, then must not be blank (422 Invalid otherwise).
- ``kubectl get @PLURAL@`` shows Name, Message, Replicas and Age.

``wit/world.wit`` names the exported interfaces; the server serves a verb exactly when the component exports the
interface behind it. The helper module ``wasm_apiserver`` is ``sdk/wasm_apiserver.py`` (see ``sdk/README.md``).
"""

import wasm_apiserver as api

GROUP = "@GROUP@"
KIND = "@KIND@"
PLURAL = "@PLURAL@"
SINGULAR = "@SINGULAR@"
#: The longest message, in characters.
MAX_MESSAGE_LENGTH = 200

#: The OpenAPI v3 schema of a v1 @KIND@ (the server adds apiVersion, kind and metadata). Its ``example`` is what
#: ``wasm-apiserver plugin check`` runs every hook on.
SCHEMA = {
    "type": "object",
    "description": "@KIND@ is an object of the @GROUP@ API. Describe what it stands for here.",
    "example": {"spec": {"message": "Hello from a @KIND@", "replicas": 2}},
    "properties": {
        "spec": {
            "type": "object",
            "description": "The desired state of the @KIND@.",
            "required": ["message"],
            "properties": {
                "message": {
                    "type": "string",
                    "maxLength": MAX_MESSAGE_LENGTH,
                    "description": "What the @KIND@ says. Required and not blank; leading and trailing spaces are "
                    "removed.",
                },
                "replicas": {
                    "type": "integer",
                    "format": "int32",
                    "minimum": 0,
                    "default": 1,
                    "description": "How many copies of the @KIND@ there should be. At least 0; defaults to 1.",
                },
            },
        },
    },
}

_MESSAGE = api.FieldPath("spec", "message")


def prepare(obj):
    """Removes leading and trailing spaces from the message (before validation, on create and update)."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("message"), str):
        spec["message"] = spec["message"].strip()
    return obj


def validate(obj):
    """The field errors of a @KIND@: the message must not be blank. (Types, ``required``, ``maxLength`` and
    ``minimum`` are the schema's, checked by the server before this runs.)"""
    message = api.get_path(obj, "spec.message")
    if not isinstance(message, str) or not message.strip():
        return [api.required(_MESSAGE, f"a {KIND} needs a message that is not blank")]
    return []


class Plugin(api.Plugin):
    """The plugin: each hook checks the resource and calls the functions above."""

    def info(self):
        resource = api.resource(
            KIND,
            PLURAL,
            [api.version("v1", SCHEMA, storage=True)],
            singular=SINGULAR,
        )
        return api.plugin_info(GROUP, [resource])

    def prepare_for_create(self, resource, obj):
        _check_resource(resource)
        return prepare(obj)

    def validate(self, resource, obj):
        _check_resource(resource)
        return validate(obj)

    def prepare_for_update(self, resource, obj, old):
        _check_resource(resource)
        return prepare(obj)

    def validate_update(self, resource, obj, old):
        _check_resource(resource)
        return validate(obj)

    def columns(self, resource):
        return [
            api.name_column(),
            api.column("Message", "string", "What the object says."),
            api.column("Replicas", "integer", "How many copies there should be."),
            api.age_column(),
        ]

    def row(self, resource, obj):
        _check_resource(resource)
        spec = obj.get("spec") or {}
        metadata = obj.get("metadata") or {}
        return [metadata.get("name", ""), spec.get("message"), spec.get("replicas"), metadata.get("creationTimestamp")]


def _check_resource(resource):
    if resource != PLURAL:
        raise api.NotFound(f"the plugin serves no resource {resource!r}")


api.export(Plugin(), globals())
