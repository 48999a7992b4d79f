"""Unit tests of the books plugin's logic, run natively by build.sh (CPython with the generated bindings on the path).

Run by hand: generate the bindings (`componentize-py -d WIT -w books bindings DIR`, see build.sh) and run
`PYTHONPATH=DIR:../../guest-sdk/python python3 -m unittest test_books` in this directory.
"""

import copy
import json
import unittest

import books
from componentize_py_types import Err
from wit_world.exports import scheme
from wit_world.imports import types


def book(version, spec, **metadata):
    meta = {"name": "dune", "namespace": "default", "creationTimestamp": "2026-01-02T03:04:05Z"}
    meta.update(metadata)
    return {"apiVersion": f"books.example.com/{version}", "kind": "Book", "metadata": meta, "spec": spec}


def text(value):
    return json.dumps(value)


class SchemeTest(unittest.TestCase):
    def test_v1_is_preferred_and_stored_and_v1beta1_is_deprecated(self):
        info = books.Scheme().info()
        self.assertEqual(info.group, "books.example.com")
        [resource] = info.resources
        self.assertEqual(
            (resource.kind, resource.plural, resource.singular, resource.short_names, resource.scope),
            ("Book", "books", "book", ["bk"], scheme.Scope.NAMESPACED),
        )
        versions = [(v.name, v.served, v.storage, v.deprecated) for v in resource.versions]
        self.assertEqual(versions, [("v1", True, True, False), ("v1beta1", True, False, True)])
        self.assertIn("deprecated", resource.versions[1].deprecation_warning)
        for v in resource.versions:
            schema = json.loads(v.schema)
            self.assertEqual(schema["type"], "object")
            for name, prop in schema["properties"]["spec"]["properties"].items():
                self.assertTrue(prop.get("description"), f"{v.name} spec.{name} has a description")
        v1 = json.loads(resource.versions[0].schema)["properties"]["spec"]["properties"]
        self.assertEqual(set(v1), {"title", "authors", "pages", "genre", "copies"})
        self.assertEqual(v1["genre"]["enum"], list(books.GENRES))


class DefaultingTest(unittest.TestCase):
    def test_v1_defaults_genre_and_pages(self):
        out = json.loads(books.Defaulter().default("books", text(book("v1", {"title": "Dune"}))))
        self.assertEqual(out["spec"], {"title": "Dune", "pages": 0, "genre": "unknown"})
        kept = json.loads(books.Defaulter().default("books", text(book("v1", {"pages": 3, "genre": "fiction"}))))
        self.assertEqual(kept["spec"], {"pages": 3, "genre": "fiction"})

    def test_v1beta1_defaults_pages_only(self):
        out = json.loads(books.Defaulter().default("books", text(book("v1beta1", {"title": "Dune"}))))
        self.assertEqual(out["spec"], {"title": "Dune", "pages": 0})

    def test_a_spec_that_is_not_an_object_is_a_bad_request(self):
        with self.assertRaises(Err) as caught:
            books.Defaulter().default("books", text(book("v1", "nonsense")))
        self.assertIsInstance(caught.exception.value, types.Error_BadRequest)
        with self.assertRaises(Err) as caught:
            books.Defaulter().default("books", "{not json")
        self.assertIsInstance(caught.exception.value, types.Error_BadRequest)


class ValidationTest(unittest.TestCase):
    def errors(self, obj):
        return [(e.kind, e.field) for e in books.CreateStrategy().validate("books", text(obj)).errors]

    def test_a_complete_book_is_valid(self):
        spec = {"title": "Dune", "authors": ["Frank Herbert"], "pages": 412, "genre": "fiction"}
        self.assertEqual(self.errors(book("v1", spec)), [])
        self.assertEqual(self.errors(book("v1beta1", {"title": "Dune", "author": "F. H.", "pages": 1})), [])

    def test_each_rule_names_its_field(self):
        K = types.FieldErrorKind
        bad = {"pages": -1, "genre": "cookbook", "authors": ["ok", " ", 7]}
        self.assertEqual(
            self.errors(book("v1", bad)),
            [
                (K.REQUIRED, "spec.title"),
                (K.INVALID, "spec.pages"),
                (K.REQUIRED, "spec.authors[1]"),
                (K.INVALID, "spec.authors[2]"),
                (K.NOT_SUPPORTED, "spec.genre"),
            ],
        )
        self.assertEqual(self.errors(book("v1beta1", {"title": "x", "pages": True})), [(K.INVALID, "spec.pages")])
        self.assertEqual(
            self.errors(book("v1", {"title": 5, "pages": 1.5})), [(K.INVALID, "spec.title"), (K.INVALID, "spec.pages")]
        )
        self.assertEqual(self.errors(book("v1", None)), [(K.REQUIRED, "spec")])

    def test_details_quote_values_like_kubernetes(self):
        result = books.CreateStrategy().validate("books", text(book("v1", {"title": "t", "pages": -2, "genre": "x"})))
        details = {e.field: e.detail for e in result.errors}
        self.assertEqual(details["spec.pages"], "-2: must be greater than or equal to 0")
        self.assertTrue(details["spec.genre"].startswith('"x": supported values: "biography", '))

    def test_v1_fields_saved_in_a_v1beta1_annotation_are_validated(self):
        annotations = {books.V1_SPEC_ANNOTATION: text({"genre": "cookbook"})}
        errors = self.errors(book("v1beta1", {"title": "t"}, annotations=annotations))
        self.assertEqual(
            errors, [(types.FieldErrorKind.NOT_SUPPORTED, f"metadata.annotations[{books.V1_SPEC_ANNOTATION}]")]
        )

    def test_the_title_is_immutable(self):
        old = book("v1", {"title": "Dune", "pages": 1})
        new = book("v1", {"title": "Dune Messiah", "pages": 1})
        result = books.UpdateStrategy().validate_update("books", text(new), text(old))
        self.assertEqual(
            [(e.kind, e.field, e.detail) for e in result.errors],
            [(types.FieldErrorKind.INVALID, "spec.title", '"Dune Messiah": field is immutable')],
        )
        same = book("v1", {"title": "Dune", "pages": 2})
        self.assertEqual(books.UpdateStrategy().validate_update("books", text(same), text(old)).errors, [])

    def test_an_unknown_resource_fails_the_validation_call(self):
        # A validation has no error to return: the SDK raises on (a 500 naming the plugin and the call).
        with self.assertRaisesRegex(TypeError, "validate raised NotFound .*serves no resource 'magazines'"):
            books.CreateStrategy().validate("magazines", text(book("v1", {"title": "t"})))


class ConversionTest(unittest.TestCase):
    def convert(self, obj, to_version):
        return json.loads(books.Converter().convert("books", text(obj), to_version))

    def test_v1_to_v1beta1_and_back_is_lossless(self):
        original = book(
            "v1",
            {
                "title": "Good Omens",
                "authors": ["Terry Pratchett", "Neil Gaiman"],
                "pages": 288,
                "genre": "fantasy",
                "isbn": "0-575-04800-X",
            },
            labels={"a": "b"},
        )
        beta = self.convert(original, "v1beta1")
        self.assertEqual(beta["apiVersion"], "books.example.com/v1beta1")
        self.assertEqual(
            beta["spec"],
            {"title": "Good Omens", "author": "Terry Pratchett, Neil Gaiman", "pages": 288, "isbn": "0-575-04800-X"},
        )
        self.assertIn(books.V1_SPEC_ANNOTATION, beta["metadata"]["annotations"])
        self.assertEqual(beta["metadata"]["labels"], {"a": "b"})
        self.assertEqual(self.convert(beta, "v1"), original)

    def test_authors_with_commas_survive_a_round_trip(self):
        original = book(
            "v1",
            {"title": "t", "authors": ["Doe, Jane", "Roe, R."], "pages": 1, "genre": "science"},
            annotations={"keep": "me"},
        )
        self.assertEqual(self.convert(self.convert(original, "v1beta1"), "v1"), original)

    def test_an_edited_v1beta1_author_is_split(self):
        beta = self.convert(book("v1", {"title": "t", "authors": ["A"], "pages": 1, "genre": "poetry"}), "v1beta1")
        beta["spec"]["author"] = "A, B ,C"
        v1 = self.convert(beta, "v1")
        self.assertEqual(v1["spec"], {"title": "t", "authors": ["A", "B", "C"], "pages": 1, "genre": "poetry"})
        self.assertNotIn("annotations", v1["metadata"])

    def test_a_v1beta1_book_gets_v1_defaults(self):
        v1 = self.convert(book("v1beta1", {"title": "t", "author": "X"}), "v1")
        self.assertEqual(v1["spec"], {"title": "t", "authors": ["X"], "pages": 0, "genre": "unknown"})
        v1 = self.convert(book("v1beta1", {"title": "t", "author": None}), "v1")
        self.assertEqual(v1["spec"], {"title": "t", "pages": 0, "genre": "unknown"})
        with self.assertRaises(Err) as caught:
            self.convert(book("v1beta1", {"title": "t", "author": 3}), "v1")
        self.assertIsInstance(caught.exception.value, types.Error_BadRequest)

    def test_the_same_version_is_only_relabelled_and_others_are_refused(self):
        original = book("v1", {"title": "t"})
        self.assertEqual(self.convert(original, "v1"), original)
        with self.assertRaises(Err) as caught:
            self.convert(original, "v2")
        self.assertIsInstance(caught.exception.value, types.Error_BadRequest)


class ListAndTableTest(unittest.TestCase):
    def test_genre_is_selectable(self):
        self.assertEqual(books.Lister().selectable_fields("books"), ["spec.genre"])
        stored = book("v1", {"title": "t", "genre": "history"})
        self.assertEqual(books.Lister().get_attrs("books", text(stored)), [("spec.genre", "history")])

    def test_rows_match_columns(self):
        columns = books.TableConvertor().columns("books")
        self.assertEqual([c.name for c in columns], ["Name", "Title", "Authors", "Pages", "Genre", "Age"])
        self.assertEqual((columns[-1].type, columns[3].type, columns[4].priority), ("date", "integer", 1))
        stored = book("v1", {"title": "Dune", "authors": ["A", "B"], "pages": 9, "genre": "fiction"})
        row = json.loads(books.TableConvertor().row("books", text(stored)))
        self.assertEqual(row, ["dune", "Dune", "A, B", 9, "fiction", "2026-01-02T03:04:05Z"])

    def test_prepare_drops_status_and_keeps_the_rest(self):
        obj = book("v1", {"title": "t"})
        with_status = copy.deepcopy(obj)
        with_status["status"] = {"x": 1}
        self.assertEqual(json.loads(books.CreateStrategy().prepare_for_create("books", text(with_status))), obj)
        out = books.UpdateStrategy().prepare_for_update("books", text(with_status), text(obj))
        self.assertEqual(json.loads(out), obj)
        self.assertFalse(books.UpdateStrategy().allow_create_on_update("books"))
        self.assertIsNone(books.DeleteStrategy().validate_delete("books", text(obj)))


    def test_status_and_scale(self):
        self.assertEqual(books.StatusStrategy().resources(), ["books"])
        obj = book("v1", {"title": "t", "copies": 2})
        obj["status"] = {"available": -1, "observedGeneration": 1}
        invalid = books.StatusStrategy().validate_status_update("books", text(obj), text(obj))
        self.assertEqual([e.field for e in invalid.errors], ["status.available"])
        obj["status"] = {"available": 2}
        self.assertEqual(books.StatusStrategy().validate_status_update("books", text(obj), text(obj)).errors, [])
        paths = books.Scaler().scale_paths("books")
        self.assertEqual((paths.spec_replicas_path, paths.status_replicas_path), (".spec.copies", ".status.available"))
        self.assertIsNone(paths.label_selector_path)
        self.assertIsNone(books.Scaler().scale_paths("magazines"))
        negative = book("v1", {"title": "t", "copies": -2})
        self.assertEqual([e.field for e in books.validate_book(negative)], ["spec.copies"])


if __name__ == "__main__":
    unittest.main()
