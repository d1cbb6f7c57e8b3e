"""The rules for names, label keys and values, with the messages apimachinery's
``util/validation`` gives (``IsValidLabelValue``, ``IsQualifiedName``, ``IsDNS1123Label``,
``IsDNS1123Subdomain``): one place for the object validation and the label selector
parser."""

from __future__ import annotations

import re

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
MAX_LABEL_VALUE = 63

_VALUE_RULE = ("a valid label must be an empty string or consist of alphanumeric characters, "
               "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
               "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
               "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
_NAME_RULE = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
              "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
              "or '123-abc', regex used for validation is "
              "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                   "characters, '-' or '.', and must start and end with an alphanumeric "
                   "character (e.g. 'example.com', regex used for validation is "
                   "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
               "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',"
               "  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
_PREFIX_RULE = ("prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def label_value_errors(value: str) -> list[str]:
    """What is wrong with a label value (empty: nothing)."""
    errors = []
    if len(value) > MAX_LABEL_VALUE:
        errors.append(f"must be no more than {MAX_LABEL_VALUE} characters")
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(_VALUE_RULE)
    return errors


def qualified_name_errors(key: str) -> list[str]:
    """What is wrong with a label key, a qualified name ``[prefix/]name`` (empty: nothing)."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _NAME_RULE.removeprefix("name part ")
                + " with an optional DNS subdomain prefix and '/' (e.g. "
                "'example.com/MyName')"]
    prefix, name = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    errors = []
    if len(parts) == 2:
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errors.append("prefix part must be no more than 253 characters")
        elif not _DNS_SUBDOMAIN.fullmatch(prefix):
            errors.append(_PREFIX_RULE)
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > MAX_LABEL_VALUE:
        errors.append(f"name part must be no more than {MAX_LABEL_VALUE} characters")
    if name and not _NAME_PART.fullmatch(name):
        errors.append(_NAME_RULE)
    return errors


def dns_subdomain_errors(value: str) -> list[str]:
    """What is wrong with a DNS-1123 subdomain, e.g. most objects' names (empty: nothing)."""
    errors = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS_SUBDOMAIN.fullmatch(value):
        errors.append(_SUBDOMAIN_RULE)
    return errors


def dns_label_errors(value: str) -> list[str]:
    """What is wrong with a DNS-1123 label, e.g. a namespace's name (empty: nothing)."""
    errors = []
    if len(value) > MAX_LABEL_VALUE:
        errors.append(f"must be no more than {MAX_LABEL_VALUE} characters")
    if not _DNS_LABEL.fullmatch(value):
        errors.append(_LABEL_RULE)
    return errors


_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_1035_RULE = ("a DNS-1035 label must consist of lower case alphanumeric characters or "
                  "'-', start with an alphabetic character, and end with an alphanumeric "
                  "character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
                  "'[a-z]([-a-z0-9]*[a-z0-9])?')")


def dns1035_label_errors(value: str) -> list[str]:
    """What is wrong with a DNS-1035 label, e.g. a resource's plural (empty: nothing)."""
    errors = []
    if len(value) > MAX_LABEL_VALUE:
        errors.append(f"must be no more than {MAX_LABEL_VALUE} characters")
    if not _DNS_1035.fullmatch(value):
        errors.append(_DNS_1035_RULE)
    return errors
