"""test_checker_parts.py: the template renderer and the expression evaluator of check_terraform.py
against what Terraform 1.x does (the expected texts were taken from `terraform console`)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hcl_expr import HclError, evaluate  # noqa: E402  pylint: disable=wrong-import-position
import tftemplate  # noqa: E402  pylint: disable=wrong-import-position


class Templates(unittest.TestCase):
    def test_strip_marker_takes_blanks_and_one_newline(self):
        # terraform console: templatefile of this text gives "Ax\nB\n  y\n\nC\n"
        text = "A%{ if true ~}   x\nB%{ if true ~}\n\n  y\n%{ endif ~}\n%{ endif }\nC\n"
        self.assertEqual(tftemplate.render(text, {}), "Ax\nB\n  y\n\nC\n")

    def test_for_keeps_the_indentation_of_its_body(self):
        text = "a:\n%{ for x in xs ~}\n  - ${x}\n%{ endfor ~}\nb: 1\n"
        self.assertEqual(tftemplate.render(text, {"xs": ["p", "q"]}), "a:\n  - p\n  - q\nb: 1\n")

    def test_escapes(self):
        self.assertEqual(tftemplate.render("d: $${HOME} %%{x}\n", {}), "d: ${HOME} %{x}\n")

    def test_if_else_and_numbers(self):
        text = "%{ if b > 0 ~}\nbudget: ${b}\n%{ else ~}\nvalue: ${v}\n%{ endif ~}\n"
        self.assertEqual(tftemplate.render(text, {"b": 40.0, "v": 1.2}), "budget: 40\n")
        self.assertEqual(tftemplate.render(text, {"b": 0, "v": 1.2}), "value: 1.2\n")

    def test_for_over_a_map_with_two_names(self):
        text = "%{ for k, v in m ~}\n${k}=${v}\n%{ endfor ~}\n"
        self.assertEqual(tftemplate.render(text, {"m": {"a": 1, "b": True}}), "a=1\nb=true\n")

    def test_attributes_and_bad_templates(self):
        self.assertEqual(tftemplate.render("${o.zone}", {"o": {"zone": "z1"}}), "z1")
        with self.assertRaises(HclError):
            tftemplate.render("%{ if true }x", {})
        with self.assertRaises(HclError):
            tftemplate.render("${missing}", {})

    def test_used_names_leave_out_loop_names_and_functions(self):
        text = "%{ for o in offers ~}\n${o.zone} ${upper(name)}\n%{ endfor ~}\n${port}"
        self.assertEqual(tftemplate.used_names(text), {"offers", "name", "port"})


class Expressions(unittest.TestCase):
    def test_validation_forms(self):
        v = {"zones": {"us-east-1a": "subnet-01234567"}, "cidrs": ["10.0.0.0/8", "0.0.0.0/0"],
             "public": False, "n": 3.0}
        self.assertTrue(evaluate("length(var.zones) > 0", {"var": v}))
        self.assertTrue(evaluate('alltrue([for z, s in var.zones : can(regex("^subnet-", s))])', {"var": v}))
        self.assertFalse(evaluate('var.public || !anytrue([for c in var.cidrs : endswith(c, "/0")])', {"var": v}))
        self.assertTrue(evaluate("floor(var.n) == var.n && var.n >= 1", {"var": v}))
        self.assertTrue(evaluate('startswith("us-central1-a", "${var.r}-")', {"var": {"r": "us-central1"}}))
        self.assertFalse(evaluate("can(cidrhost(\"10.0.0.300/8\", 0))", {}))

    def test_keys_of_a_map(self):
        v = {"tags": {"team": "ml", "castor:cluster": "c"}}
        self.assertEqual(evaluate("keys(var.tags)", {"var": v}), ["castor:cluster", "team"])
        self.assertFalse(evaluate('!contains(keys(var.tags), "castor:cluster")', {"var": v}))
        self.assertTrue(evaluate('!contains(keys(var.tags), "castor:cluster")', {"var": {"tags": {}}}))

    def test_tonumber_and_split(self):
        self.assertEqual(evaluate('tonumber(split("-", "61000-61999")[1])', {}), 61999)
        self.assertEqual(evaluate('tonumber("2.5")', {}), 2.5)
        self.assertFalse(evaluate('can(tonumber("12a"))', {}))
        self.assertFalse(evaluate('can(tonumber(split("-", "61000")[1]))', {}))
        self.assertTrue(evaluate('can(regex("^true$", tostring(tonumber("3") <= tonumber("4"))))', {}))
        self.assertFalse(evaluate('can(regex("^true$", tostring(tonumber("5") <= tonumber("4"))))', {}))

    def test_null_comparison_fails_as_in_terraform(self):
        with self.assertRaises(HclError):
            evaluate("var.x > 0", {"var": {"x": None}})

    def test_conditional_operator_refused(self):
        with self.assertRaises(HclError):
            evaluate("var.x == null ? true : false", {"var": {"x": None}})


if __name__ == "__main__":
    unittest.main()
