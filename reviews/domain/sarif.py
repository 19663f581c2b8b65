"""SARIF 2.1.0 in and out, as rules (docs/sarif.md).

In: a log a CI job uploads for a round has one run per tool. `read_runs` turns each run into
plain results (rule, level, message, file, lines, CWE, tags); `result_payload` turns a result
into an `add_review_node` payload and the analyzer evidence stored with it, so a SARIF finding
is validated, redacted, fingerprinted, merged and judged exactly like a built-in analyzer's.
Only results on lines the change adds become findings (a review comments on the change, the
same rule as the offline analyzers); the others are counted.

Priority, the same table as the built-in analyzers (docs/analyzer-severities.md):
- a rule id or CWE the severity table knows (bandit `B608`, ruff `S608`, CWE-89, …) is
  security with that class's floor; the tool's level (or GitHub's `security-severity`) only
  starts it, capped by the class's label ceiling like bandit's own labels;
- a run of a tool Quorum also runs offline (`tool_mapping`, e.g. ruff's table) keeps that table
  for its other rules, so ruff's SARIF `F401` is the same P3 as Quorum's own ruff finding;
- any other rule goes by its level: error → P1, warning → P2, note/none → P3, or by
  `security-severity` when the tool gives one (≥ 9 → P0, ≥ 7 → P1, ≥ 4 → P2, else P3, GitHub's
  critical/high/medium/low bands).
A SARIF finding is never on the high-precision list: a pattern match from CI holds a change
and needs a model, a lens or a person to block it, like any analyzer's.

Out: `sarif_log` writes a round's findings (the review JSON's canonical nodes) as one run named
Quorum with a rule per rule id, `partialFingerprints` from the node's fingerprint so code
scanning keeps tracking a finding across pushes, and dismissed or resolved findings as
suppressed results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .severity_floors import DefectClass, cap_label, classify, floor_for, raise_to_floor
from .types import Category, NodeStatus, NodeType, Priority, severity_for_priority

#: (type, priority, category, confidence) of a rule id for a tool Quorum also runs offline.
ToolMapping = Callable[[str], tuple[NodeType, Priority, Category, float]]

LEVELS = ("error", "warning", "note", "none")
LEVEL_PRIORITY = {
    "error": Priority.P1,
    "warning": Priority.P2,
    "note": Priority.P3,
    "none": Priority.P3,
}
LEVEL_CONFIDENCE = {"error": 0.7, "warning": 0.6, "note": 0.5, "none": 0.4}
#: CodeQL's `precision` rule property.
PRECISION_CONFIDENCE = {"very-high": 0.9, "high": 0.8, "medium": 0.6, "low": 0.4}
PRIORITY_LEVEL = {
    Priority.P0: "error",
    Priority.P1: "error",
    Priority.P2: "warning",
    Priority.P3: "note",
}
#: GitHub code scanning ranks security results by the rule's `security-severity` (0–10).
PRIORITY_SECURITY_SEVERITY = {
    Priority.P0: "9.5",
    Priority.P1: "8.0",
    Priority.P2: "5.5",
    Priority.P3: "2.0",
}
FINGERPRINT_KEY = "quorumFindingFingerprint/v1"

_CWE = re.compile(r"\bcwe[-/:_ ]?(\d{1,5})\b", re.IGNORECASE)
_FILE_SCHEME = re.compile(r"^file:(?://[^/]*)?", re.IGNORECASE)
_TITLE_MAX = 200
_MESSAGE_MAX = 4000


@dataclass(frozen=True, slots=True)
class SarifResult:
    rule_id: str
    level: str
    message: str
    uri: str | None  # the artifact's URI as the tool wrote it (relative or file://)
    start_line: int | None
    end_line: int | None
    cwe: int | None
    security: bool  # the tool tags the rule or result as security
    security_severity: float | None
    precision: str | None
    help_uri: str | None


@dataclass(frozen=True, slots=True)
class SarifRun:
    tool: str
    version: str
    results: tuple[SarifResult, ...]


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        text = value.get("text")
        return text if isinstance(text, str) else ""
    return ""


def _properties(obj: Any) -> Mapping[str, Any]:
    props = obj.get("properties") if isinstance(obj, Mapping) else None
    return props if isinstance(props, Mapping) else {}


def _tags(obj: Any) -> list[str]:
    tags = _properties(obj).get("tags")
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _cwe_of(*texts: str) -> int | None:
    for text in texts:
        match = _CWE.search(text)
        if match:
            return int(match.group(1))
    return None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _rule_for(result: Mapping[str, Any], rules: Sequence[Any]) -> Mapping[str, Any]:
    index = result.get("ruleIndex")
    if not isinstance(index, int):
        rule_ref = result.get("rule")
        index = rule_ref.get("index") if isinstance(rule_ref, Mapping) else None
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(rules):
        found = rules[index]
        return found if isinstance(found, Mapping) else {}
    rule_id = _result_rule_id(result)
    for rule in rules:
        if isinstance(rule, Mapping) and rule.get("id") == rule_id and rule_id:
            return rule
    return {}


def _result_rule_id(result: Mapping[str, Any]) -> str:
    rule_id = result.get("ruleId")
    if isinstance(rule_id, str) and rule_id:
        return rule_id
    rule_ref = result.get("rule")
    if isinstance(rule_ref, Mapping) and isinstance(rule_ref.get("id"), str):
        return str(rule_ref["id"])
    return ""


def _location(result: Mapping[str, Any]) -> tuple[str | None, int | None, int | None]:
    locations = result.get("locations")
    if not isinstance(locations, list) or not locations:
        return None, None, None
    physical = locations[0].get("physicalLocation") if isinstance(locations[0], Mapping) else None
    if not isinstance(physical, Mapping):
        return None, None, None
    artifact = physical.get("artifactLocation")
    uri = artifact.get("uri") if isinstance(artifact, Mapping) else None
    region = physical.get("region")
    start = end = None
    if isinstance(region, Mapping):
        start = region.get("startLine")
        end = region.get("endLine", start)
    start = start if isinstance(start, int) and not isinstance(start, bool) else None
    end = end if isinstance(end, int) and not isinstance(end, bool) else start
    if start is not None and (end is None or end < start):
        end = start
    return (uri if isinstance(uri, str) else None), start, end


def read_runs(log: Mapping[str, Any]) -> list[SarifRun]:
    """The runs of a log that passed the SARIF schema, as plain values."""
    runs = []
    for run in log.get("runs") or []:
        driver = run["tool"]["driver"]
        rules = driver.get("rules") or []
        results = []
        for result in run.get("results") or []:
            rule = _rule_for(result, rules)
            rule_id = _result_rule_id(result) or str(rule.get("id") or "")
            default = rule.get("defaultConfiguration")
            level = result.get("level") or (
                default.get("level") if isinstance(default, Mapping) else None
            )
            tags = [*_tags(rule), *_tags(result)]
            rule_props, result_props = _properties(rule), _properties(result)
            cwe = _cwe_of(
                *tags, str(rule_props.get("cwe") or ""), str(result_props.get("cwe") or "")
            )
            uri, start, end = _location(result)
            message = _text(result.get("message")) or _text(rule.get("shortDescription"))
            severity = _float(result_props.get("security-severity"))
            if severity is None:
                severity = _float(rule_props.get("security-severity"))
            precision = rule_props.get("precision")
            help_uri = rule.get("helpUri")
            results.append(
                SarifResult(
                    rule_id=rule_id[:100],
                    level=level if level in LEVELS else "warning",
                    message=message[:_MESSAGE_MAX],
                    uri=uri,
                    start_line=start,
                    end_line=end,
                    cwe=cwe,
                    security=any(t.lower() == "security" for t in tags) or severity is not None,
                    security_severity=severity,
                    precision=precision if isinstance(precision, str) else None,
                    help_uri=help_uri if isinstance(help_uri, str) else None,
                )
            )
        runs.append(
            SarifRun(
                tool=str(driver["name"]).strip() or "SARIF",
                version=str(driver.get("semanticVersion") or driver.get("version") or ""),
                results=tuple(results),
            )
        )
    return runs


def changed_path(uri: str | None, changed: Mapping[str, frozenset[int]]) -> str | None:
    """The changed file a result's URI names: the same relative path, or an absolute (or
    `file://`) path that ends with it (CI checks the repository out under some directory)."""
    if not uri:
        return None
    path = _FILE_SCHEME.sub("", uri).replace("%20", " ")
    path = path.removeprefix("./")
    if path in changed:
        return path
    best = None
    for candidate in changed:
        if path.endswith("/" + candidate) and (best is None or len(candidate) > len(best)):
            best = candidate
    return best


def on_change(result: SarifResult, path: str | None, changed: Mapping[str, frozenset[int]]) -> bool:
    """Whether any line the result covers is one the change adds."""
    if path is None or result.start_line is None:
        return False
    added = changed.get(path, frozenset())
    end = result.end_line or result.start_line
    return any(line in added for line in range(result.start_line, end + 1))


def _band(severity: float) -> Priority:
    if severity >= 9.0:
        return Priority.P0
    if severity >= 7.0:
        return Priority.P1
    if severity >= 4.0:
        return Priority.P2
    return Priority.P3


@dataclass(frozen=True, slots=True)
class Ranked:
    type: NodeType
    priority: Priority
    category: Category
    confidence: float
    defect: DefectClass | None


def rank(result: SarifResult, tool_mapping: ToolMapping | None = None) -> Ranked:
    """Type, priority, category and confidence of a result (the module docstring's table)."""
    defect = classify(result.rule_id, result.cwe)
    labelled = (
        _band(result.security_severity)
        if result.security_severity is not None
        else LEVEL_PRIORITY[result.level]
    )
    confidence = PRECISION_CONFIDENCE.get(result.precision or "", LEVEL_CONFIDENCE[result.level])
    if defect is not None:
        priority = raise_to_floor(cap_label(labelled, defect), floor_for(defect))
        return Ranked(NodeType.BUG, priority, Category.SECURITY, confidence, defect)
    if tool_mapping is not None:
        node_type, priority, category, confidence = tool_mapping(result.rule_id)
        return Ranked(node_type, priority, category, confidence, None)
    security = result.security or result.cwe is not None
    category = Category.SECURITY if security else Category.CORRECTNESS
    if labelled is Priority.P3:
        node_type = NodeType.RECOMMENDATION if security else NodeType.SUGGESTION
        category = category if security else Category.MAINTAINABILITY
    else:
        node_type = NodeType.BUG
    return Ranked(node_type, labelled, category, confidence, None)


def result_payload(
    result: SarifResult, *, tool: str, path: str, tool_mapping: ToolMapping | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The `add_review_node` payload of a result on the change, and its analyzer evidence."""
    ranked = rank(result, tool_mapping)
    rule = result.rule_id or tool
    first_line = (result.message.strip().splitlines() or [rule])[0]
    cwe = f" (CWE-{result.cwe})" if result.cwe is not None else ""
    start = result.start_line or 1
    end = result.end_line or start
    body = f"{tool} `{rule}`{cwe}: {result.message.strip() or rule}"
    if result.help_uri:
        body += f"\n\nRule: {result.help_uri}"
    payload: dict[str, Any] = {
        "reasoning": (
            f"{tool} reported {rule} at level {result.level} on a line the change adds "
            f"(uploaded as SARIF); mapped to {ranked.priority} {ranked.type} by the analyzer "
            "table" + (f" ({ranked.defect.value} floor)" if ranked.defect is not None else "") + "."
        ),
        "type": ranked.type.value,
        "priority": ranked.priority.value,
        "triage": {
            "category": ranked.category.value,
            "severity": severity_for_priority(ranked.priority).value,
            "effort": "small",
        },
        "anchor": {"path": path, "start_line": start, "end_line": end},
        "confidence": ranked.confidence,
        "title": f"{rule}: {first_line}"[:_TITLE_MAX],
        "body": body,
    }
    evidence = {"tool": tool, "rule": rule, "high_precision": False}
    return payload, evidence


# -- out ---------------------------------------------------------------------------------------


def _rule_id(node: Mapping[str, Any]) -> str:
    analyzer = (node.get("tags") or {}).get("analyzer")
    if isinstance(analyzer, Mapping) and analyzer.get("rule"):
        return str(analyzer["rule"])
    return f"quorum/{node['triage']['category']}"


_CLOSED = frozenset({NodeStatus.DISMISSED.value, NodeStatus.RESOLVED.value})


def _suppressions(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    status = node["status"]
    if status not in _CLOSED:
        return []
    return [
        {
            "kind": "external",
            "status": "accepted",
            "justification": f"{status.capitalize()} in Quorum.",
        }
    ]


def sarif_log(review: Mapping[str, Any], *, schema_uri: str, version: str = "") -> dict[str, Any]:
    """A review JSON (`quorum.review/v1`) as a SARIF 2.1.0 log: one run, tool Quorum."""
    nodes = [n for n in review["nodes"] if n.get("duplicate_of") is None]
    rules: dict[str, dict[str, Any]] = {}
    index: dict[str, int] = {}
    worst: dict[str, Priority] = {}
    results = []
    for node in nodes:
        rule_id = _rule_id(node)
        priority = Priority(node["priority"])
        category = node["triage"]["category"]
        if rule_id not in rules:
            index[rule_id] = len(rules)
            rules[rule_id] = {
                "id": rule_id,
                "shortDescription": {"text": node["title"][:_TITLE_MAX]},
                "properties": {"tags": [category]},
            }
            worst[rule_id] = priority
        elif priority.rank < worst[rule_id].rank:
            worst[rule_id] = priority
        anchor = node.get("anchor")
        result: dict[str, Any] = {
            "ruleId": rule_id,
            "ruleIndex": index[rule_id],
            "level": PRIORITY_LEVEL[priority],
            "message": {"text": f"{node['title']}\n\n{node['body']}".strip()},
            "properties": {
                "priority": priority.value,
                "category": category,
                "status": node["status"],
                "reviewers": list(node.get("reviewers") or []),
                "confidence": node["confidence"],
                "quorumNodeId": node["id"],
            },
        }
        if anchor and anchor.get("side", "RIGHT") == "RIGHT" and anchor.get("start_line"):
            start = anchor["start_line"]
            result["locations"] = [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": anchor["path"], "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": start, "endLine": anchor.get("end_line") or start},
                    }
                }
            ]
        if node.get("fingerprint"):
            result["partialFingerprints"] = {FINGERPRINT_KEY: node["fingerprint"]}
        if suppressions := _suppressions(node):
            result["suppressions"] = suppressions
        results.append(result)
    for rule_id, rule in rules.items():
        if "security" in rule["properties"]["tags"]:
            rule["properties"]["security-severity"] = PRIORITY_SECURITY_SEVERITY[worst[rule_id]]
    driver: dict[str, Any] = {"name": "Quorum", "rules": list(rules.values())}
    if version:
        driver["version"] = version
    pr = review.get("pull_request") or {}
    round_ = review.get("round") or {}
    return {
        "$schema": schema_uri,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "originalUriBaseIds": {
                    "%SRCROOT%": {"description": {"text": "The repository's root."}}
                },
                "results": results,
                "properties": {
                    "repository": pr.get("repository", ""),
                    "head_sha": pr.get("head_sha", ""),
                    "round": round_.get("number"),
                    "verdict": (review.get("verdict") or {}).get("level"),
                },
            }
        ],
    }
