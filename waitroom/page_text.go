package waitroom

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Text is the waiting page's words in one language.
type Text struct {
	// Name is the language's own name, for the page's language switch.
	Name                                                                        string
	Title, Heading, Position, Length, ETA, OpensIn, Note                        string
	Waiting, NotOpen, Unavailable, Limited, Left, Unknown, UnderMinute, Minutes string
	// Place says "place p of n" for screen readers (the progress bar's aria-valuetext); its verbs
	// are %[1]d (the place) and %[2]d (the line's length).
	Place string
	// Language labels the language switch.
	Language string
}

// languages are the waiting page's built-in languages, in the order the language switch lists
// them.
var languages = [...]string{"en", "zh", "ja", "es", "de", "fr"}

// Languages returns the codes of the waiting page's built-in languages ("en", "zh", "ja", "es",
// "de", "fr"), in the order the page's language switch lists them.
func Languages() []string { return slices.Clone(languages[:]) }

// texts holds the built-in words. Short labels (position, length, ETA) stay short enough that
// the ETA fits one line on a 360 px wide phone. French puts a no-break space (U+00A0) before a
// colon and between a number and its unit, as French typography does.
var texts = map[string]Text{
	"en": {
		Name:  "English",
		Title: "You are in line", Heading: "You are in line",
		Position: "your place", Length: "in line", ETA: "estimated wait", OpensIn: "Opens in",
		Note:        "Keep this page open: it refreshes by itself and takes you in when it is your turn. Refreshing keeps your place.",
		Waiting:     "The site is busy. You will be let in as soon as a place is free.",
		NotOpen:     "The site has not opened yet. Everyone who arrives before the start is put in a random order when it opens.",
		Unavailable: "The waiting room cannot be reached right now. This page will try again shortly.",
		Limited:     "Too many refreshes. This page will try again shortly.",
		Left:        "You have left the line. Reload this page in a moment to join it again.",
		Unknown:     "unknown", UnderMinute: "under a minute", Minutes: "about %d min",
		Place: "place %[1]d of %[2]d", Language: "Language",
	},
	"zh": {
		Name:  "中文",
		Title: "正在排队", Heading: "您正在排队",
		Position: "您的位置", Length: "排队人数", ETA: "预计等待", OpensIn: "距离开放还有",
		Note:        "请保持本页面打开：页面会自动刷新，轮到您时会自动进入。刷新页面不会丢失您的位置。",
		Waiting:     "当前访问人数较多，一有空位就会让您进入。",
		NotOpen:     "尚未开放。开放前到达的访客将在开放时随机排序。",
		Unavailable: "排队服务暂时无法连接，本页面稍后会自动重试。",
		Limited:     "刷新过于频繁，本页面稍后会自动重试。",
		Left:        "您已离开队列。稍后刷新本页面即可重新排队。",
		Unknown:     "未知", UnderMinute: "不到 1 分钟", Minutes: "约 %d 分钟",
		Place: "第 %[1]d 位，共 %[2]d 人", Language: "语言",
	},
	"ja": {
		Name:  "日本語",
		Title: "順番待ち", Heading: "ただいま順番待ちです",
		Position: "あなたの順番", Length: "待っている人数", ETA: "予想待ち時間", OpensIn: "開始まで",
		Note:        "このページを開いたままお待ちください。自動で更新され、順番が来ると自動的に入場できます。再読み込みしても順番は変わりません。",
		Waiting:     "ただいまアクセスが集中しています。空きができ次第、順番にご案内します。",
		NotOpen:     "まだ開始前です。開始前にお越しの方は、開始時にランダムな順番で並び替えられます。",
		Unavailable: "現在、待合室に接続できません。まもなくこのページが自動で再試行します。",
		Limited:     "再読み込みの回数が多すぎます。まもなくこのページが自動で再試行します。",
		Left:        "列から離れました。もう一度並ぶには、少し待ってからこのページを再読み込みしてください。",
		Unknown:     "不明", UnderMinute: "1分未満", Minutes: "約%d分",
		Place: "%[2]d人中%[1]d番目", Language: "言語",
	},
	"es": {
		Name:  "Español",
		Title: "Estás en la fila", Heading: "Estás en la fila",
		Position: "tu lugar", Length: "en la fila", ETA: "espera estimada", OpensIn: "Abre en",
		Note:        "Mantén esta página abierta: se actualiza sola y te hará entrar cuando sea tu turno. Si la recargas, conservas tu lugar.",
		Waiting:     "El sitio tiene mucha demanda. Entrarás en cuanto quede un lugar libre.",
		NotOpen:     "El sitio aún no ha abierto. Quienes lleguen antes de la apertura recibirán un orden aleatorio cuando abra.",
		Unavailable: "No es posible conectar con la sala de espera ahora mismo. Esta página lo volverá a intentar en breve.",
		Limited:     "Demasiadas recargas. Esta página lo volverá a intentar en breve.",
		Left:        "Has salido de la fila. Recarga esta página en unos instantes para volver a unirte.",
		Unknown:     "desconocida", UnderMinute: "menos de un minuto", Minutes: "unos %d min",
		Place: "lugar %[1]d de %[2]d", Language: "Idioma",
	},
	"de": {
		Name:  "Deutsch",
		Title: "Sie sind in der Warteschlange", Heading: "Sie sind in der Warteschlange",
		Position: "Ihr Platz", Length: "Wartende", ETA: "geschätzte Wartezeit", OpensIn: "Öffnet in",
		Note:        "Lassen Sie diese Seite geöffnet: Sie aktualisiert sich selbst und lässt Sie ein, sobald Sie an der Reihe sind. Beim Neuladen behalten Sie Ihren Platz.",
		Waiting:     "Die Website ist gerade stark ausgelastet. Sie werden eingelassen, sobald ein Platz frei wird.",
		NotOpen:     "Die Website ist noch nicht geöffnet. Alle, die vor dem Start da sind, werden beim Start in eine zufällige Reihenfolge gebracht.",
		Unavailable: "Der Warteraum ist gerade nicht erreichbar. Diese Seite versucht es gleich noch einmal.",
		Limited:     "Zu viele Aktualisierungen. Diese Seite versucht es gleich noch einmal.",
		Left:        "Sie haben die Warteschlange verlassen. Laden Sie diese Seite gleich neu, um sich wieder anzustellen.",
		Unknown:     "unbekannt", UnderMinute: "weniger als eine Minute", Minutes: "etwa %d Min.",
		Place: "Platz %[1]d von %[2]d", Language: "Sprache",
	},
	"fr": {
		Name:  "Français",
		Title: "Vous êtes dans la file d’attente", Heading: "Vous êtes dans la file d’attente",
		Position: "votre place", Length: "dans la file", ETA: "attente estimée", OpensIn: "Ouverture dans",
		Note:        "Gardez cette page ouverte\u00a0: elle s’actualise toute seule et vous fera entrer dès que ce sera votre tour. Actualiser la page ne vous fait pas perdre votre place.",
		Waiting:     "Le site est très sollicité. Vous entrerez dès qu’une place se libérera.",
		NotOpen:     "Le site n’est pas encore ouvert. Les personnes arrivées avant l’ouverture seront placées dans un ordre aléatoire au moment de l’ouverture.",
		Unavailable: "La salle d’attente est momentanément inaccessible. Cette page réessaiera dans un instant.",
		Limited:     "Trop d’actualisations. Cette page réessaiera dans un instant.",
		Left:        "Vous avez quitté la file. Rechargez cette page dans un moment pour la rejoindre à nouveau.",
		Unknown:     "inconnue", UnderMinute: "moins d’une minute", Minutes: "environ %d\u00a0min",
		Place: "place %[1]d sur %[2]d", Language: "Langue",
	},
}

// langCookie holds the language the visitor picked with the page's switch; it outranks the room's
// language and Accept-Language.
const langCookie = "sluice_lang"

func supported(lang string) bool { return slices.Contains(languages[:], lang) }

// language picks the page's language: the visitor's own pick (the switch's cookie), else the
// room's setting, else the first of the request's Accept-Language (by q) that is built in, else
// English.
func language(room string, r *http.Request) string {
	if ck, err := r.Cookie(langCookie); err == nil && supported(ck.Value) {
		return ck.Value
	}
	if room != "" {
		return room
	}
	type tag struct {
		lang string
		q    float64
		i    int
	}
	var tags []tag
	for i, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		base, _, _ := strings.Cut(strings.ToLower(name), "-")
		if supported(base) {
			tags = append(tags, tag{base, q, i})
		}
	}
	slices.SortStableFunc(tags, func(a, b tag) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return a.i - b.i
	})
	for _, t := range tags {
		if t.q > 0 {
			return t.lang
		}
	}
	return "en"
}
