"""Unit tests of the @NAME@ plugin, run natively by build.sh before every build (CPython 3.11+ with the generated
bindings on the path; PLUGIN_SKIP_TESTS=1 skips them)."""

import json
import unittest

import @MODULE@ as plugin


def obj(spec):
    return {"apiVersion": f"{plugin.GROUP}/v1", "kind": plugin.KIND, "metadata": {"name": "x"}, "spec": spec}


class PluginTest(unittest.TestCase):
    def test_the_message_is_trimmed_and_may_not_be_blank(self):
        ok = plugin.prepare(obj({"message": "  hello  "}))
        self.assertEqual(ok["spec"]["message"], "hello")
        self.assertEqual(plugin.validate(ok), [])
        [error] = plugin.validate(plugin.prepare(obj({"message": "   "})))
        self.assertEqual(error.field, "spec.message")

    def test_the_schema_example_is_valid(self):
        example = obj(plugin.SCHEMA["example"]["spec"])
        self.assertEqual(plugin.validate(plugin.prepare(example)), [])

    def test_the_exported_create_strategy_answers_json(self):
        text = plugin.CreateStrategy().prepare_for_create(plugin.PLURAL, json.dumps(obj({"message": " hi "})))
        self.assertEqual(json.loads(text)["spec"]["message"], "hi")
        result = plugin.CreateStrategy().validate(plugin.PLURAL, json.dumps(obj({"message": ""})))
        self.assertEqual([e.field for e in result.errors], ["spec.message"])


if __name__ == "__main__":
    unittest.main()
