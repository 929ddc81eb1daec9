# METADATA
# title: Data classes of form fields
# description: |
#   Classifies a form field by its property name, its title and its
#   format. Names and titles are cut into words (camelCase, snake_case,
#   kebab-case and spaces all work), and phrases of up to three words are
#   looked up in the table below: a phrase ("email address") hides the
#   classes of the words it is made of. The class "secret" is never
#   looked up here: it is the guard core's verdict, which the input
#   carries for every form field ("fields"), so one detector (ten
#   languages, with negators) decides what a secret is in every runtime.
#   A field that matches nothing gets a class from its type: choice
#   (boolean, enum), number, free_text. Deployments add words with
#   classifier.words in their data file (never for "secret").
package mrtr.classify

# Every class a field can have. Data files may only name these.
classes := {
	"account",
	"address",
	"birth_date",
	"choice",
	"contact.email",
	"contact.name",
	"contact.phone",
	"date",
	"free_text",
	"government_id",
	"health",
	"number",
	"organization",
	"payment",
	"secret",
	"url",
}

# field_classes is the set of classes of the form field name with schema
# prop, given the core's verdict on it (the input's fields[name]). It is
# always defined and never empty.
field_classes(name, prop, verdict) := found if {
	found := ((text_classes(name) | text_classes(title(prop))) | format_classes(prop)) | core_classes(verdict)
	count(found) > 0
} else := {type_class(prop)}

# core_classes is {"secret"} when the guard core found that the field asks
# for a secret (verdict.class names which kind); a field the core cleared
# is no secret to the policy either.
core_classes(verdict) := {"secret"} if {
	is_string(verdict.class)
	verdict.class != ""
} else := set()

title(prop) := t if {
	t := prop.title
	is_string(t)
} else := ""

format_classes(prop) := {c | c := format_class[prop.format]}

format_class := {
	"email": "contact.email",
	"date": "date",
	"date-time": "date",
	"uri": "url",
}

type_class(prop) := "choice" if {
	is_choice(prop)
} else := "number" if {
	prop.type in {"number", "integer"}
} else := "free_text"

is_choice(prop) if prop.type == "boolean"

is_choice(prop) if prop.type == "array"

is_choice(prop) if prop.enum

is_choice(prop) if prop.oneOf

# tokens cuts a name or title into lower-case words.
# Letters beyond ASCII are one range, not Unicode classes: compiling
# those tables on every Wasm evaluation costs milliseconds.
tokens(s) := [lower(m[0]) | some m in regex.find_all_string_submatch_n(`[A-Z]+[a-z\x{80}-\x{10FFFF}]*|[a-z\x{80}-\x{10FFFF}]+|[0-9]+`, s, -1)]

# text_classes is the set of classes the words of s name.
text_classes(s) := {c | some t in toks; c := word_class(t)} if {
	toks := tokens(s)
	count(toks) < 2 # no phrases: the common case, kept quick
} else := cs if {
	toks := tokens(s)
	n := count(toks)
	hits := {[i, k, c] |
		some i, _ in toks
		some k in [2, 3]
		i + k <= n
		c := word_class(concat("_", array.slice(toks, i, i + k)))
	}
	covered := {j | some [i, k, _] in hits; some j in numbers.range(i, (i + k) - 1)}
	single := {c | some i, t in toks; not covered[i]; c := word_class(t)}
	cs := {c | some [_, _, c] in hits} | single
}

word_class(w) := c if {
	c := data.mrtr.config.classifier.words[w]
	c != "secret"
} else := words[w]

# words maps a lower-case word or phrase (words joined with "_") to its
# class. Phrases usually written as one word ("firstname") are listed
# that way too.
words := {
	# contact.name
	"name": "contact.name",
	"names": "contact.name",
	"first_name": "contact.name",
	"firstname": "contact.name",
	"last_name": "contact.name",
	"lastname": "contact.name",
	"surname": "contact.name",
	"full_name": "contact.name",
	"fullname": "contact.name",
	"given_name": "contact.name",
	"family_name": "contact.name",
	"middle_name": "contact.name",
	"display_name": "contact.name",
	"nickname": "contact.name",
	"contact_name": "contact.name",
	"nombre": "contact.name",
	"apellido": "contact.name",
	"apellidos": "contact.name",
	"nom": "contact.name",
	"prénom": "contact.name",
	"prenom": "contact.name",
	"vorname": "contact.name",
	"nachname": "contact.name",
	"nome": "contact.name",
	"sobrenome": "contact.name",
	"cognome": "contact.name",
	"姓名": "contact.name",
	"名前": "contact.name",
	"이름": "contact.name",
	# contact.email
	"email": "contact.email",
	"emails": "contact.email",
	"e_mail": "contact.email",
	"mail": "contact.email",
	"email_address": "contact.email",
	"emailaddress": "contact.email",
	"mail_address": "contact.email",
	"correo": "contact.email",
	"correo_electrónico": "contact.email",
	"courriel": "contact.email",
	"邮箱": "contact.email",
	"电子邮件": "contact.email",
	"メール": "contact.email",
	"이메일": "contact.email",
	# contact.phone
	"phone": "contact.phone",
	"phones": "contact.phone",
	"telephone": "contact.phone",
	"tel": "contact.phone",
	"mobile": "contact.phone",
	"cell": "contact.phone",
	"cellphone": "contact.phone",
	"phone_number": "contact.phone",
	"phonenumber": "contact.phone",
	"mobile_number": "contact.phone",
	"whatsapp": "contact.phone",
	"fax": "contact.phone",
	"teléfono": "contact.phone",
	"telefono": "contact.phone",
	"telefon": "contact.phone",
	"téléphone": "contact.phone",
	"celular": "contact.phone",
	"handynummer": "contact.phone",
	"电话": "contact.phone",
	"電話番号": "contact.phone",
	# address
	"address": "address",
	"addresses": "address",
	"addr": "address",
	"street": "address",
	"street_address": "address",
	"home_address": "address",
	"mailing_address": "address",
	"postal_address": "address",
	"shipping_address": "address",
	"billing_address": "address",
	"city": "address",
	"town": "address",
	"zip": "address",
	"zipcode": "address",
	"zip_code": "address",
	"postcode": "address",
	"postal_code": "address",
	"postalcode": "address",
	"province": "address",
	"country": "address",
	"dirección": "address",
	"direccion": "address",
	"adresse": "address",
	"endereço": "address",
	"indirizzo": "address",
	"straße": "address",
	"strasse": "address",
	"ciudad": "address",
	"ville": "address",
	"stadt": "address",
	"住所": "address",
	"地址": "address",
	# date
	"date": "date",
	"time": "date",
	"datetime": "date",
	"day": "date",
	"when": "date",
	"slot": "date",
	"time_slot": "date",
	"timeslot": "date",
	"schedule": "date",
	"appointment": "date",
	"deadline": "date",
	"fecha": "date",
	"hora": "date",
	"datum": "date",
	"uhrzeit": "date",
	"heure": "date",
	# birth_date
	"dob": "birth_date",
	"birthday": "birth_date",
	"birthdate": "birth_date",
	"birth_date": "birth_date",
	"date_of_birth": "birth_date",
	"dateofbirth": "birth_date",
	"birth": "birth_date",
	"nacimiento": "birth_date",
	"fecha_de_nacimiento": "birth_date",
	"geburtsdatum": "birth_date",
	"naissance": "birth_date",
	"date_de_naissance": "birth_date",
	"nascimento": "birth_date",
	"生年月日": "birth_date",
	# government_id
	"ssn": "government_id",
	"social_security": "government_id",
	"social_security_number": "government_id",
	"passport": "government_id",
	"passport_number": "government_id",
	"national_id": "government_id",
	"nationalid": "government_id",
	"national_insurance": "government_id",
	"nino": "government_id",
	"tax_id": "government_id",
	"taxid": "government_id",
	"tin": "government_id",
	"itin": "government_id",
	"ein": "government_id",
	"driver_license": "government_id",
	"drivers_license": "government_id",
	"driver_licence": "government_id",
	"driving_licence": "government_id",
	"license_number": "government_id",
	"licence_number": "government_id",
	"id_number": "government_id",
	"id_card": "government_id",
	"identity_card": "government_id",
	"dni": "government_id",
	"nie": "government_id",
	"nif": "government_id",
	"cpf": "government_id",
	"curp": "government_id",
	"cédula": "government_id",
	"cedula": "government_id",
	"aadhaar": "government_id",
	"aadhar": "government_id",
	"personalausweis": "government_id",
	"steuernummer": "government_id",
	"bsn": "government_id",
	"pesel": "government_id",
	"codice_fiscale": "government_id",
	"マイナンバー": "government_id",
	# payment
	"card": "payment",
	"card_number": "payment",
	"cardnumber": "payment",
	"credit_card": "payment",
	"creditcard": "payment",
	"debit_card": "payment",
	"cc": "payment",
	"cc_number": "payment",
	"ccn": "payment",
	"pan": "payment",
	"iban": "payment",
	"bic": "payment",
	"swift": "payment",
	"swift_code": "payment",
	"sort_code": "payment",
	"account_number": "payment",
	"routing_number": "payment",
	"bank_account": "payment",
	"bank": "payment",
	"cvv": "payment",
	"cvc": "payment",
	"csc": "payment",
	"expiry": "payment",
	"expiry_date": "payment",
	"exp_date": "payment",
	"card_expiry": "payment",
	"billing": "payment",
	"payment": "payment",
	"tarjeta": "payment",
	"kreditkarte": "payment",
	"carte": "payment",
	"cartão": "payment",
	"信用卡": "payment",
	# health
	"health": "health",
	"medical": "health",
	"diagnosis": "health",
	"allergy": "health",
	"allergies": "health",
	"medication": "health",
	"medications": "health",
	"prescription": "health",
	"disability": "health",
	"blood_type": "health",
	"pregnancy": "health",
	# account
	"username": "account",
	"user_name": "account",
	"login": "account",
	"user_id": "account",
	"userid": "account",
	"account": "account",
	"account_id": "account",
	"customer_id": "account",
	"member_id": "account",
	"handle": "account",
	"screen_name": "account",
	"ip": "account",
	"ip_address": "account",
	# organization
	"company": "organization",
	"company_name": "organization",
	"organization": "organization",
	"organisation": "organization",
	"organization_name": "organization",
	"org": "organization",
	"employer": "organization",
	"business": "organization",
	"business_name": "organization",
	"job_title": "organization",
	"department": "organization",
	"empresa": "organization",
	"firma": "organization",
	"entreprise": "organization",
	"société": "organization",
	"unternehmen": "organization",
	# url
	"url": "url",
	"uri": "url",
	"website": "url",
	"web_site": "url",
	"homepage": "url",
	"link": "url",
	"web_address": "url",
	# plain words that only look like a class
	"file_name": "free_text",
	"filename": "free_text",
	"event_name": "free_text",
	"meeting_name": "free_text",
	"project_name": "free_text",
	"team_name": "free_text",
}
