package mrtr.classify_test

import data.mrtr.classify

cleared := {"class": "", "language": "", "reason": ""}

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
	classify.field_classes("name", {"type": "string"}, cleared) == {"contact.name"}
	classify.field_classes("workEmail", {"type": "string"}, cleared) == {"contact.email"}
	classify.field_classes("x", {"type": "string", "format": "email"}, cleared) == {"contact.email"}
	classify.field_classes("x", {"type": "string", "title": "Your phone number"}, cleared) == {"contact.phone"}
	classify.field_classes("when", {"type": "string", "format": "date-time"}, cleared) == {"date"}
	classify.field_classes("homepage", {"type": "string", "format": "uri"}, cleared) == {"url"}
}

test_phrases_hide_their_words if {
	# "email address" is an email, not an address
	classify.field_classes("emailAddress", {"type": "string"}, cleared) == {"contact.email"}
	classify.field_classes("company_name", {"type": "string"}, cleared) == {"organization"}
	classify.field_classes("date_of_birth", {"type": "string", "format": "date"}, cleared) == {"birth_date", "date"}
	classify.field_classes("account_number", {"type": "string"}, cleared) == {"payment"}
}

test_sensitive_words_are_never_hidden if {
	# a phrase hides only the words it is made of
	classify.field_classes("ssn_email_address", {"type": "string"}, cleared) == {"government_id", "contact.email"}
	classify.field_classes("card", {"type": "string", "title": "Card number"}, cleared) == {"payment"}
	classify.field_classes("value", {"type": "string", "title": "Your API key"}, {"class": "api_key"}) == {"secret"}
	classify.field_classes("pin", {"type": "string"}, {"class": "pin"}) == {"secret"}
	classify.field_classes("card", {"type": "string", "title": "Card number"}, {"class": "payment_card"}) == {"payment", "secret"}
}

# "secret" is the core's verdict alone: the policy has no secret words, so
# a field the core clears is no secret here either.
test_secret_is_the_cores_verdict if {
	classify.field_classes("password_hint", {"type": "string"}, cleared) == {"free_text"}
	classify.field_classes("token_count", {"type": "integer"}, cleared) == {"number"}
	classify.field_classes("api_key_name", {"type": "string"}, cleared) == {"contact.name"}
	classify.field_classes("has_api_key", {"type": "boolean"}, cleared) == {"choice"}
	classify.field_classes("x", {"type": "string"}, {"class": "password"}) == {"secret"}
	# a deployment cannot make a word secret
	cs := classify.field_classes("kennwort", {"type": "string"}, cleared) with data.mrtr.config.classifier.words as {"kennwort": "secret"}
	cs == {"free_text"}
}

test_whole_words_only if {
	# "pin" inside "shipping" and "tel" inside "hotel" are not words
	classify.field_classes("shipping_speed", {"type": "string", "enum": ["fast", "slow"]}, cleared) == {"choice"}
	classify.field_classes("hotel", {"type": "string"}, cleared) == {"free_text"}
}

test_types_when_nothing_else_matches if {
	classify.field_classes("confirm", {"type": "boolean"}, cleared) == {"choice"}
	classify.field_classes("size", {"type": "string", "enum": ["s", "m"]}, cleared) == {"choice"}
	classify.field_classes("size", {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]}, cleared) == {"choice"}
	classify.field_classes("tags", {"type": "array", "items": {"type": "string", "enum": ["a"]}}, cleared) == {"choice"}
	classify.field_classes("seats", {"type": "integer"}, cleared) == {"number"}
	classify.field_classes("notes", {"type": "string"}, cleared) == {"free_text"}
	classify.field_classes("odd", "not an object", cleared) == {"free_text"}
}

test_other_languages if {
	classify.field_classes("correo", {"type": "string"}, cleared) == {"contact.email"}
	classify.field_classes("x", {"type": "string", "title": "Teléfono"}, cleared) == {"contact.phone"}
	classify.field_classes("passwort", {"type": "string"}, {"class": "password"}) == {"secret"}
	classify.field_classes("x", {"type": "string", "title": "Mot de passe"}, {"class": "password"}) == {"secret"}
}

test_deployment_words if {
	cs := classify.field_classes("kundennummer", {"type": "string"}, cleared) with data.mrtr.config.classifier.words as {"kundennummer": "account"}
	cs == {"account"}
	classify.field_classes("kundennummer", {"type": "string"}, cleared) == {"free_text"}
}

test_every_table_class_is_known if {
	every _, c in classify.words {
		c in classify.classes
		c != "secret"
	}
	every _, c in classify.format_class {
		c in classify.classes
	}
}
