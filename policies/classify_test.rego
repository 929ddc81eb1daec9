package mrtr.classify_test

import data.mrtr.classify

test_tokens_split_cases_and_separators if {
	classify.tokens("workEmail") == ["work", "email"]
	classify.tokens("first_name") == ["first", "name"]
	classify.tokens("e-mail address") == ["e", "mail", "address"]
	classify.tokens("APIKey") == ["apikey"]
	classify.tokens("address_line2") == ["address", "line", "2"]
	classify.tokens("Teléfono móvil") == ["teléfono", "móvil"]
	classify.tokens("") == []
}

test_names_titles_and_formats if {
	classify.field_classes("name", {"type": "string"}) == {"contact.name"}
	classify.field_classes("workEmail", {"type": "string"}) == {"contact.email"}
	classify.field_classes("x", {"type": "string", "format": "email"}) == {"contact.email"}
	classify.field_classes("x", {"type": "string", "title": "Your phone number"}) == {"contact.phone"}
	classify.field_classes("when", {"type": "string", "format": "date-time"}) == {"date"}
	classify.field_classes("homepage", {"type": "string", "format": "uri"}) == {"url"}
}

test_phrases_hide_their_words if {
	# "email address" is an email, not an address
	classify.field_classes("emailAddress", {"type": "string"}) == {"contact.email"}
	classify.field_classes("company_name", {"type": "string"}) == {"organization"}
	classify.field_classes("date_of_birth", {"type": "string", "format": "date"}) == {"birth_date", "date"}
	classify.field_classes("account_number", {"type": "string"}) == {"payment"}
}

test_sensitive_words_are_never_hidden if {
	# a phrase hides only the words it is made of
	classify.field_classes("ssn_email_address", {"type": "string"}) == {"government_id", "contact.email"}
	classify.field_classes("card", {"type": "string", "title": "Card number"}) == {"payment"}
	classify.field_classes("value", {"type": "string", "title": "Your API key"}) == {"secret"}
	classify.field_classes("pin", {"type": "string"}) == {"secret"}
}

test_whole_words_only if {
	# "pin" inside "shipping" and "tel" inside "hotel" are not words
	classify.field_classes("shipping_speed", {"type": "string", "enum": ["fast", "slow"]}) == {"choice"}
	classify.field_classes("hotel", {"type": "string"}) == {"free_text"}
}

test_types_when_nothing_else_matches if {
	classify.field_classes("confirm", {"type": "boolean"}) == {"choice"}
	classify.field_classes("size", {"type": "string", "enum": ["s", "m"]}) == {"choice"}
	classify.field_classes("size", {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]}) == {"choice"}
	classify.field_classes("tags", {"type": "array", "items": {"type": "string", "enum": ["a"]}}) == {"choice"}
	classify.field_classes("seats", {"type": "integer"}) == {"number"}
	classify.field_classes("notes", {"type": "string"}) == {"free_text"}
	classify.field_classes("odd", "not an object") == {"free_text"}
}

test_other_languages if {
	classify.field_classes("correo", {"type": "string"}) == {"contact.email"}
	classify.field_classes("x", {"type": "string", "title": "Teléfono"}) == {"contact.phone"}
	classify.field_classes("passwort", {"type": "string"}) == {"secret"}
	classify.field_classes("x", {"type": "string", "title": "Mot de passe"}) == {"secret"}
}

test_deployment_words if {
	cs := classify.field_classes("kundennummer", {"type": "string"}) with data.mrtr.config.classifier.words as {"kundennummer": "account"}
	cs == {"account"}
	classify.field_classes("kundennummer", {"type": "string"}) == {"free_text"}
}

test_every_table_class_is_known if {
	every _, c in classify.words {
		c in classify.classes
	}
	every _, c in classify.format_class {
		c in classify.classes
	}
}
