"""``books.example.com``: a wasm-apiserver plugin in Python serving the namespaced resource ``books`` (kind Book).

Versions:

- ``v1`` (preferred, storage): ``spec {title, authors: [string], pages: int, genre}``.
- ``v1beta1`` (served, deprecated): ``spec {title, author: string, pages: int}``.

Conversion (through the plugin's ``converter``):

- v1 → v1beta1: ``author`` is the authors joined by ``", "``. What v1beta1 cannot hold (the ``authors`` list and the
  ``genre``) is kept, as JSON, in the annotation ``books.example.com/v1-spec`` - as Kubernetes keeps newer fields in
  annotations of older versions - so a round trip through v1beta1 loses nothing.
- v1beta1 → v1: ``authors`` are the saved ones when ``author`` still equals their join (so names containing ``", "``
  survive), else ``author`` split at commas; ``genre`` comes from the annotation, which is removed. v1 defaults are
  applied, so an object written through v1beta1 is stored complete (``genre: unknown``).
- Fields of ``spec`` that neither version knows are carried over unchanged in both directions.

Subresources: ``/status`` (``status.available``: the copies on the shelf, ``status.observedGeneration``) and
``/scale`` on the copies (``kubectl scale book/x --replicas=3`` buys or sells copies: ``spec.copies``, with
``status.available`` as the observed count).

Defaulting: v1 ``genre`` → ``unknown`` and ``pages`` → ``0`` when absent; v1beta1 ``pages`` → ``0``.
Validation (create and update, in the request's version): ``spec.title`` required, ``spec.pages`` an integer ≥ 0,
``spec.genre`` one of :data:`GENRES`, ``spec.authors`` a list of non-empty strings (``spec.author`` a string).
Update: ``spec.title`` is immutable. Field selectors may use ``spec.genre``. ``kubectl get books`` shows Name, Title,
Authors, Pages, Age (and Genre with ``-o wide``).
"""

import json

import wasm_apiserver as api

GROUP = "books.example.com"
BOOKS = "books"
KIND = "Book"
V1 = "v1"
V1BETA1 = "v1beta1"
#: The annotation of a v1beta1 object keeping the v1 fields v1beta1 cannot represent.
V1_SPEC_ANNOTATION = "books.example.com/v1-spec"
#: The genres a v1 book may have.
GENRES = ("biography", "fantasy", "fiction", "history", "mystery", "non-fiction", "poetry", "science", "unknown")
DEFAULT_GENRE = "unknown"
#: The separator between authors in v1beta1's ``author``.
AUTHOR_SEPARATOR = ", "
DEPRECATION_WARNING = "books.example.com/v1beta1 Book is deprecated; use books.example.com/v1 Book"

_SPEC = api.FieldPath("spec")

# ---------------------------------------------------------------------------------------------------------------------
# Schemas


def _book_schema(description, spec_description, spec_properties):
    return {
        "type": "object",
        "description": description,
        "properties": {
            "spec": {
                "type": "object",
                "description": spec_description,
                "required": ["title"],
                "properties": {**spec_properties, "copies": _COPIES},
            },
            "status": {
                "type": "object",
                "description": "BookStatus is what the library observes of a book, written through /status.",
                "properties": {
                    "available": {
                        "type": "integer",
                        "format": "int64",
                        "description": "The copies on the shelf (what /scale reports as the observed replicas).",
                    },
                    "observedGeneration": {
                        "type": "integer",
                        "format": "int64",
                        "description": "The metadata.generation the status was observed at.",
                    },
                },
            },
        },
    }


_TITLE = {"type": "string", "description": "The title of the book. Required; cannot be changed once set."}
_COPIES = {
    "type": "integer",
    "format": "int64",
    "minimum": 0,
    "description": "The copies the library should hold (what /scale reads and writes as the replicas).",
}
_PAGES = {
    "type": "integer",
    "format": "int64",
    "minimum": 0,
    "default": 0,
    "description": "The number of pages, at least 0. Defaults to 0.",
}

V1_SCHEMA = _book_schema(
    "Book is a book in a library.",
    "BookSpec describes a book.",
    {
        "title": _TITLE,
        "authors": {
            "type": "array",
            "description": "The authors of the book, in order.",
            "items": {"type": "string"},
            "x-kubernetes-list-type": "atomic",
        },
        "pages": _PAGES,
        "genre": {
            "type": "string",
            "enum": list(GENRES),
            "default": DEFAULT_GENRE,
            "description": "The genre of the book, one of " + ", ".join(GENRES) + '. Defaults to "unknown".',
        },
    },
)

V1BETA1_SCHEMA = _book_schema(
    "Book is a book in a library. Deprecated: use books.example.com/v1.",
    "BookSpec describes a book.",
    {
        "title": _TITLE,
        "author": {
            "type": "string",
            "description": 'The authors of the book, separated by ", ". In v1 this is the list authors.',
        },
        "pages": _PAGES,
    },
)

# ---------------------------------------------------------------------------------------------------------------------
# Defaulting, conversion and validation, on plain dicts


def _spec(obj):
    """The object's spec, created empty when absent; :class:`api.BadRequest` when it is not an object."""
    spec = obj.setdefault("spec", {})
    if spec is None:
        spec = obj["spec"] = {}
    if not isinstance(spec, dict):
        raise api.BadRequest("spec must be an object")
    return spec


def default_book(obj):
    """Sets the defaults of the object's version: pages 0 (both), genre "unknown" (v1)."""
    spec = _spec(obj)
    if spec.get("pages") is None:
        spec["pages"] = 0
    if api.version_of(obj) == V1 and spec.get("genre") in (None, ""):
        spec["genre"] = DEFAULT_GENRE
    return obj


def to_v1beta1(obj):
    """Converts a v1 book to v1beta1 (apiVersion excluded), saving authors and genre in an annotation."""
    spec = _spec(obj)
    saved = {key: spec.pop(key) for key in ("authors", "genre") if key in spec}
    authors = saved.get("authors")
    if isinstance(authors, list):
        spec["author"] = AUTHOR_SEPARATOR.join(str(a) for a in authors)
    if saved:
        metadata = obj.setdefault("metadata", {})
        annotations = metadata.get("annotations") or {}
        annotations[V1_SPEC_ANNOTATION] = json.dumps(saved, separators=(",", ":"), sort_keys=True)
        metadata["annotations"] = annotations
    return obj


def to_v1(obj):
    """Converts a v1beta1 book to v1 (apiVersion excluded), restoring what the annotation saved."""
    spec = _spec(obj)
    saved = _pop_saved_v1_fields(obj)
    author = spec.pop("author", None)
    if author is not None:
        saved_authors = saved.get("authors")
        if isinstance(saved_authors, list) and AUTHOR_SEPARATOR.join(map(str, saved_authors)) == author:
            spec["authors"] = saved_authors
        elif isinstance(author, str):
            spec["authors"] = [name.strip() for name in author.split(",") if name.strip()]
        else:
            raise api.BadRequest("spec.author must be a string")
    if "genre" in saved:
        spec["genre"] = saved["genre"]
    return obj


def _pop_saved_v1_fields(obj):
    """Removes the v1-spec annotation (and an emptied annotations map) and returns what it saved."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or V1_SPEC_ANNOTATION not in annotations:
        return {}
    text = annotations.pop(V1_SPEC_ANNOTATION)
    if not annotations:
        del metadata["annotations"]
    try:
        saved = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def validate_book(obj):
    """The field errors of a book in its own version."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [api.required(_SPEC) if spec is None else api.invalid(_SPEC, spec, "must be an object")]
    errors = []
    title = spec.get("title")
    if title is None or title == "":
        errors.append(api.required(_SPEC.child("title"), "a book needs a title"))
    elif not isinstance(title, str):
        errors.append(api.invalid(_SPEC.child("title"), title, "must be a string"))
    pages = spec.get("pages")
    if pages is not None:
        if not _is_int(pages):
            errors.append(api.invalid(_SPEC.child("pages"), pages, "must be an integer"))
        elif pages < 0:
            errors.append(api.invalid(_SPEC.child("pages"), pages, "must be greater than or equal to 0"))
    copies = spec.get("copies")
    if copies is not None and not (_is_int(copies) and copies >= 0):
        errors.append(api.invalid(_SPEC.child("copies"), copies, "must be an integer greater than or equal to 0"))
    if api.version_of(obj) == V1:
        errors.extend(_validate_v1_fields(spec))
    else:
        author = spec.get("author")
        if author is not None and not isinstance(author, str):
            errors.append(api.invalid(_SPEC.child("author"), author, "must be a string"))
        errors.extend(_validate_saved_v1_fields(obj))
    return errors


def _validate_saved_v1_fields(obj):
    """The errors of the v1 fields a v1beta1 book keeps in its annotation (they are stored on conversion to v1)."""
    annotations = api.get_path(obj, "metadata.annotations")
    text = annotations.get(V1_SPEC_ANNOTATION) if isinstance(annotations, dict) else None
    if text is None:
        return []
    path = api.FieldPath("metadata", "annotations").key(V1_SPEC_ANNOTATION)
    try:
        saved = json.loads(text)
    except (TypeError, ValueError):
        saved = None
    if not isinstance(saved, dict):
        return [api.invalid(path, text, "must be a JSON object holding v1 spec fields")]
    return [
        api.field_error(e.kind, path, f"{e.field}: {e.detail}")
        for e in _validate_v1_fields({key: saved[key] for key in ("authors", "genre") if key in saved})
    ]


def _validate_v1_fields(spec):
    errors = []
    authors = spec.get("authors")
    if authors is not None:
        if not isinstance(authors, list):
            errors.append(api.invalid(_SPEC.child("authors"), authors, "must be a list of names"))
        else:
            for i, author in enumerate(authors):
                path = _SPEC.child("authors").index(i)
                if not isinstance(author, str):
                    errors.append(api.invalid(path, author, "must be a string"))
                elif not author.strip():
                    errors.append(api.required(path, "an author needs a name"))
    genre = spec.get("genre")
    if genre is not None and genre not in GENRES:
        errors.append(api.not_supported(_SPEC.child("genre"), genre, GENRES))
    return errors


def validate_book_status(obj):
    """The field errors of a status update: counts are integers of at least 0."""
    status = obj.get("status")
    if status is None:
        return []
    path = api.FieldPath("status")
    if not isinstance(status, dict):
        return [api.invalid(path, status, "must be an object")]
    return [
        api.invalid(path.child(name), status[name], "must be an integer greater than or equal to 0")
        for name in ("available", "observedGeneration")
        if status.get(name) is not None and not (_is_int(status[name]) and status[name] >= 0)
    ]


def validate_book_update(obj, old):
    """The field errors of an update: those of the new book, and a changed title."""
    errors = validate_book(obj)
    title, old_title = api.get_path(obj, "spec.title"), api.get_path(old, "spec.title")
    if old_title not in (None, "") and title not in (None, "") and title != old_title:
        errors.append(api.invalid(_SPEC.child("title"), title, "field is immutable"))
    return errors


# ---------------------------------------------------------------------------------------------------------------------
# The plugin


def _check_resource(resource):
    if resource != BOOKS:
        raise api.NotFound(f"the books plugin serves no resource {resource!r}")


class Books(api.Plugin):
    """The books plugin: each method checks the resource and delegates to the functions above."""

    def info(self):
        book = api.resource(
            KIND,
            BOOKS,
            [
                api.version(V1, V1_SCHEMA, storage=True),
                api.version(V1BETA1, V1BETA1_SCHEMA, deprecated=True, deprecation_warning=DEPRECATION_WARNING),
            ],
            singular="book",
            short_names=["bk"],
        )
        return api.plugin_info(GROUP, [book])

    def prepare_for_create(self, resource, obj):
        _check_resource(resource)
        _spec(obj)
        obj.pop("status", None)
        return obj

    def validate(self, resource, obj):
        _check_resource(resource)
        return validate_book(obj)

    def prepare_for_update(self, resource, obj, old):
        _check_resource(resource)
        _spec(obj)
        obj.pop("status", None)
        return obj

    def validate_update(self, resource, obj, old):
        _check_resource(resource)
        return validate_book_update(obj, old)

    def validate_delete(self, resource, obj):
        _check_resource(resource)

    def status_resources(self):
        return [BOOKS]

    def validate_status_update(self, resource, obj, old):
        _check_resource(resource)
        return validate_book_status(obj)

    def scale_paths(self, resource):
        return api.replica_paths(".spec.copies", ".status.available") if resource == BOOKS else None

    def selectable_fields(self, resource):
        return ["spec.genre"] if resource == BOOKS else []

    def columns(self, resource):
        return [
            api.name_column(),
            api.column("Title", "string", "The title of the book."),
            api.column("Authors", "string", "The authors of the book."),
            api.column("Pages", "integer", "The number of pages."),
            api.column("Genre", "string", "The genre of the book.", priority=1),
            api.age_column(),
        ]

    def row(self, resource, obj):
        _check_resource(resource)
        spec = obj.get("spec") or {}
        metadata = obj.get("metadata") or {}
        authors = spec.get("authors") or []
        return [
            metadata.get("name", ""),
            spec.get("title", ""),
            AUTHOR_SEPARATOR.join(str(a) for a in authors),
            spec.get("pages", 0),
            spec.get("genre", ""),
            metadata.get("creationTimestamp"),
        ]

    def convert(self, resource, obj, to_version):
        _check_resource(resource)
        from_version = api.version_of(obj)
        if (from_version, to_version) == (V1, V1BETA1):
            return to_v1beta1(obj)
        if (from_version, to_version) == (V1BETA1, V1):
            obj["apiVersion"] = api.api_version(GROUP, V1)
            return default_book(to_v1(obj))
        raise api.BadRequest(f"cannot convert books from {from_version} to {to_version}")

    def default(self, resource, obj):
        _check_resource(resource)
        return default_book(obj)


api.export(Books(), globals())
