"""The sentences of assessment's documents, in Spanish (the English text is the key)."""

from __future__ import annotations

from servicekit.documents import Catalog

CATALOG = Catalog(
    es={
        # titles
        "Notice of decision": "Notificación de decisión",
        "Notification of deficiency": "Notificación de deficiencia",
        "Assessment of a mathematical or clerical error": "Tasación por error matemático o clerical",
        "Statement of account": "Estado de cuenta",
        # facts
        "Period": "Período",
        "Case": "Caso",
        "Notice": "Notificación",
        "Decision date": "Fecha de la decisión",
        "Date": "Fecha",
        "As of": "Al",
        "Due date": "Fecha de vencimiento",
        # components
        "Tax": "Impuesto",
        "Impact fee": "Cargo por impacto",
        "Penalty / surcharge": "Penalidad / recargo",
        "Interest": "Intereses",
        "Fines": "Multas",
        "Returned-payment fee": "Cargo por pago devuelto",
        "Component": "Componente",
        "Section": "Sección",
        "Assessed": "Tasado",
        "Paid": "Pagado",
        "Outstanding": "Pendiente",
        "Amount": "Cantidad",
        "Total": "Total",
        # decision
        "Decision": "Decisión",
        "The assessment is sustained.": "Se sostiene la tasación.",
        "The assessment is reduced.": "Se reduce la tasación.",
        "The assessment is cancelled.": "Se cancela la tasación.",
        "Reasons": "Fundamentos",
        "Decided under {section}.": "Decidido conforme a {section}.",
        "Assessed before the decision": "Tasado antes de la decisión",
        "Decided amount": "Cantidad decidida",
        "Balance of the period recomputed on {date}": "Balance del período recalculado al {date}",
        "Balance owed": "Balance adeudado",
        "Balance before the decision": "Balance antes de la decisión",
        "Appeal": "Apelación",
        "You may appeal this decision until {deadline} ({days} days, {section}).": (
            "Puede apelar esta decisión hasta el {deadline} ({days} días, {section})."
        ),
        "This term is a provisional reading where the statute is silent; the agency confirms it.": (
            "Este término es una lectura provisional donde la ley guarda silencio; la agencia lo confirma."
        ),
        "While the term runs or an appeal is pending, no collection action is taken on this period.": (
            "Mientras corre el término o está pendiente una apelación, no se toma acción de cobro "
            "sobre este período."
        ),
        # records request (audits)
        "Records request": "Requerimiento de documentos",
        "Audit": "Auditoría",
        "Records due": "Documentos requeridos para",
        "Under {section} the agency is auditing the tax periods {periods}. Please make the records "
        "listed below available to the auditor by {due}.": (
            "Conforme a {section} la agencia audita los períodos contributivos {periods}. Favor de "
            "poner a disposición del auditor los documentos indicados abajo no más tarde del {due}."
        ),
        # notice
        "Reason": "Razón",
        "Total owed on the date of this notice": "Total adeudado a la fecha de esta notificación",
        "Answering this notice": "Cómo contestar esta notificación",
        "You may pay the amount owed, accept this notice, or dispute it by {deadline} ({days} days, "
        "{section}).": (
            "Puede pagar la cantidad adeudada, aceptar esta notificación o impugnarla a más tardar el "
            "{deadline} ({days} días, {section})."
        ),
        "To dispute part of it, first pay the part you do not dispute ({section}).": (
            "Para impugnar una parte, pague primero la parte que no impugna ({section})."
        ),
        "Interest keeps accruing on what remains unpaid.": (
            "Los intereses siguen acumulándose sobre lo no pagado."
        ),
        "If this notice is neither paid nor disputed by that date, the unpaid deficiency may be charged "
        "against your bond ({section}).": (
            "Si esta notificación no se paga ni se impugna para esa fecha, la deficiencia no pagada podrá "
            "cobrarse contra su fianza ({section})."
        ),
        # statement
        "Periods": "Períodos",
        "Payments received": "Pagos recibidos",
        "Received on": "Recibido el",
        "Payment": "Pago",
        "Reversed": "Revertido",
        "Adjustments": "Ajustes",
        "Credit": "Crédito",
        "Refunded": "Reembolsado",
        "Total assessed": "Total tasado",
        "Total paid": "Total pagado",
        "Balance": "Balance",
        "No periods on this date.": "No hay períodos a esta fecha.",
        "declaration": "declaración",
        "estimate": "estimado",
        "reduce": "reducción",
        "cancel": "cancelación",
        "abate": "condonación",
        "write_off": "baja contable",
        "returned_payment_fee": "cargo por pago devuelto",
    }
)
