"""IAM's matching rules (scripts/iam.py) on the IAM User Guide's own examples."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import iam  # noqa: E402


class ActionMatching(unittest.TestCase):
    def test_actions_ignore_case(self):
        # "iam:ListAccessKeys" is the same as "IAM:listaccesskeys" (Action element).
        self.assertTrue(iam.action_matches("IAM:listaccesskeys", "iam:ListAccessKeys"))

    def test_a_wildcard_inside_an_action(self):
        # "iam:*AccessKey*" covers the access key actions (Action element).
        self.assertTrue(iam.action_matches("iam:*AccessKey*", "iam:CreateAccessKey"))
        self.assertTrue(iam.action_matches("iam:*AccessKey*", "iam:ListAccessKeys"))
        self.assertFalse(iam.action_matches("iam:*AccessKey*", "iam:ListUsers"))

    def test_an_action_is_not_a_prefix_of_another(self):
        self.assertFalse(iam.action_matches("dynamodb:GetItem", "dynamodb:GetItems"))
        self.assertFalse(iam.action_matches("dynamodb:Query", "dynamodb:BatchGetItem"))
        self.assertTrue(iam.action_matches("dynamodb:*", "dynamodb:BatchGetItem"))


class ResourceMatching(unittest.TestCase):
    def test_a_wildcard_runs_across_slashes(self):
        # "arn:aws:s3:::amzn-s3-demo-bucket/*" covers every object of the bucket (Resource element).
        self.assertTrue(iam.resource_matches("arn:aws:s3:::amzn-s3-demo-bucket/*", "arn:aws:s3:::amzn-s3-demo-bucket/a/b/c.csv"))
        self.assertFalse(iam.resource_matches("arn:aws:s3:::amzn-s3-demo-bucket/*", "arn:aws:s3:::amzn-s3-demo-bucket"))

    def test_a_question_mark_is_one_character(self):
        # "arn:aws:s3:::amzn-s3-demo-bucket/????" (wildcards in any segment).
        self.assertTrue(iam.resource_matches("arn:aws:iam::123456789012:user/?ob", "arn:aws:iam::123456789012:user/Bob"))
        self.assertFalse(iam.resource_matches("arn:aws:iam::123456789012:user/?ob", "arn:aws:iam::123456789012:user/Blob"))

    def test_resources_are_case_sensitive(self):
        self.assertFalse(iam.resource_matches("arn:aws:dynamodb:us-east-1:123456789012:table/books", "arn:aws:dynamodb:us-east-1:123456789012:table/Books"))

    def test_a_table_is_not_its_indexes(self):
        # Querying an index needs the index's ARN (DynamoDB identity-based policy examples).
        table = "arn:aws:dynamodb:us-west-2:123456789012:table/Books"
        self.assertFalse(iam.resource_matches(table, table + "/index/ByAuthor"))
        self.assertTrue(iam.resource_matches(table + "/index/*", table + "/index/ByAuthor"))


class Evaluation(unittest.TestCase):
    TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/T"

    def test_no_allow_is_an_implicit_deny(self):
        statements = [{"Effect": "Allow", "Action": ["dynamodb:Query"], "Resource": self.TABLE}]
        self.assertEqual(iam.decide(statements, "dynamodb:Query", self.TABLE), iam.ALLOW)
        self.assertEqual(iam.decide(statements, "dynamodb:BatchGetItem", self.TABLE), iam.IMPLICIT_DENY)

    def test_an_explicit_deny_wins(self):
        statements = [
            {"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"},
            {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": self.TABLE},
        ]
        self.assertEqual(iam.decide(statements, "dynamodb:DeleteItem", self.TABLE), iam.EXPLICIT_DENY)
        self.assertEqual(iam.decide(statements, "dynamodb:GetItem", self.TABLE), iam.ALLOW)

    def test_not_action_allows_everything_else(self):
        statements = [{"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}]
        self.assertEqual(iam.decide(statements, "iam:CreateUser", "*"), iam.IMPLICIT_DENY)
        self.assertEqual(iam.decide(statements, "s3:PutObject", "arn:aws:s3:::b/k"), iam.ALLOW)

    def test_a_condition_is_refused_rather_than_guessed(self):
        statements = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*", "Condition": {"Bool": {"aws:SecureTransport": "true"}}}]
        with self.assertRaises(ValueError):
            iam.decide(statements, "s3:PutObject", "arn:aws:s3:::b/k")


if __name__ == "__main__":
    unittest.main()
