"""The risk score (weights as parameters, each factor explained) and an audit's proposed assessment."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D

import pytest

from taxcore.errors import ParameterError
from taxcore.parameters import default_tree
from taxcore.rules.audit import audit_difference
from taxcore.rules.declaration import DeclarationInput
from taxcore.rules.risk import RiskInputs, risk_score

TREE = default_tree()


class TestRiskScore:
    def test_every_factor_weighted_and_capped(self) -> None:
        inp = RiskInputs(
            jurisdiction="VI",
            findings=2,
            late_periods=14,  # above the cap of 12
            crosscheck_gap=D("2500.00"),
            adr_anomalies=1,
            arrears=D("1234.56"),
            months_since_audit=None,
        )
        score = risk_score(inp, on=date(2026, 11, 30), parameters=TREE)
        points = {f.factor: f.points for f in score.factors}
        # 5x2 + 3x12 + 2x2.5 + 4x1 + 1x1.23 + 0.5x36
        assert points == {
            "findings": D("10.00"),
            "late": D("36.00"),
            "gap": D("5.00"),
            "adr": D("4.00"),
            "arrears": D("1.23"),
            "months_since_audit": D("18.00"),
        }
        assert score.score == D("74.23")
        assert score.section == "§54(d)"
        late = next(f for f in score.factors if f.factor == "late")
        assert late.explanation == "14 periods filed late: 3 x min(14.00, 12) = 36.00"
        audit = score.factors[-1]
        assert audit.explanation == "never audited (counted at the cap): 0.5 x min(36.00, 36) = 18.00"

    def test_a_recent_audit_and_a_clean_record_score_little(self) -> None:
        inp = RiskInputs(
            jurisdiction="PR",
            findings=0,
            late_periods=0,
            crosscheck_gap=D("0.00"),
            adr_anomalies=0,
            arrears=D("0.00"),
            months_since_audit=4,
        )
        score = risk_score(inp, on=date(2026, 11, 30), parameters=TREE)
        assert score.score == D("2.00")
        assert score.section == "§3(E), §10"

    def test_weights_must_name_every_factor(self) -> None:
        from taxcore.rules._common import Ref
        from taxcore.rules.risk import _weights

        with pytest.raises(ParameterError):
            _weights(Ref("risk.weights", {"findings": {"weight": D(1), "cap": D(1)}}, "§10", True, {}))


class TestAuditDifference:
    """The corrected base per component: the golden case ``golden/vi_audit.yaml`` (test_golden)."""

    def test_no_return_filed(self) -> None:
        corrected = DeclarationInput(
            jurisdiction="PR",
            lodging_class="hotel",
            period="2026-03",
            room_revenue=D("1000.00"),
            room_nights=10,
        )
        diff = audit_difference(None, corrected, parameters=TREE)
        assert diff.additional_tax == D("90.00")
        assert [c.filed for c in diff.components] == [D("0.00")] * 4
