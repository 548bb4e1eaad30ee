"""Channel classification: each rule of peer-read 4.1, the label-boundary fix, and Direct stored as ""."""

from __future__ import annotations

import pytest

from api_backend.ingest.channels import CHANNELS, classify_channel, source_type


def utm(**values: str) -> dict[str, str]:
    return {(k if k in ("gclid", "gad_source") else f"utm_{k}"): v for k, v in values.items()}


def test_channels001_there_are_29_channel_names():
    assert len(CHANNELS) == 29 and len(set(CHANNELS)) == 29
    assert {"Paid AI", "AI", "Cross-Network", "Paid Unknown", "Unknown", "Internal"} <= set(CHANNELS)


@pytest.mark.parametrize(
    ("referrer", "tags", "expected"),
    [
        # rule 1: app ids in utm_source
        ("", utm(source="com.facebook.katana"), "Organic Social"),
        ("", utm(source="com.google.android.youtube"), "Organic Video"),
        ("", utm(source="com.openai.chatgpt"), "AI"),
        ("", utm(source="com.google.android.gm"), "Email"),
        ("", utm(source="com.nytimes.android"), "News"),
        ("", utm(source="com.notion.id"), "Productivity"),
        ("", utm(source="com.ebay.mobile"), "Organic Shopping"),
        ("", utm(source="com.microsoft.bing"), "Organic Search"),
        # rule 2 and 4: direct
        ("", {}, ""),
        ("", utm(source="direct"), ""),
        ("", utm(source="(direct)"), ""),
        ("", {"gclid": "abc"}, ""),
        # rule 3
        ("https://news.example.org/", utm(campaign="cross-network"), "Cross-Network"),
        # rule 5: paid by source type, then by medium
        ("https://www.google.com/", utm(medium="cpc"), "Paid Search"),
        ("https://www.google.com/", {"gclid": "x"}, "Paid Search"),
        ("", utm(source="facebook", medium="paid-social"), "Paid Social"),
        ("", utm(source="youtube", medium="cpm"), "Paid Social"),  # youtube is in the social list first
        ("", utm(source="vimeo", medium="cpc"), "Paid Video"),
        ("", utm(source="amazon", medium="ppc"), "Paid Shopping"),
        ("", utm(source="chatgpt", medium="cpc"), "Paid AI"),
        ("", utm(source="partnerco", medium="display"), "Display"),
        ("", utm(source="partnerco", medium="cpm"), "Display"),
        ("", utm(source="partnerco", medium="cpc"), "Paid Search"),
        ("", utm(source="partnerco", medium="paid"), "Paid Unknown"),
        ("", utm(source="facebook ads"), "Paid Unknown"),  # paid phrase, but not a known source name
        # rule 6: organic by source type
        ("https://www.bing.com/search?q=x", {}, "Organic Search"),
        ("https://www.google.co.uk/", {}, "Organic Search"),
        ("https://t.co/abc", {}, "Organic Social"),
        ("https://vimeo.com/123", {}, "Organic Video"),
        ("https://www.etsy.com/", {}, "Organic Shopping"),
        ("https://chatgpt.com/", {}, "AI"),
        ("", utm(source="newsletter"), "Email"),
        ("", utm(source="twilio"), "SMS"),
        # rule 7: organic by medium
        ("", utm(source="partnerco", medium="social"), "Organic Social"),
        ("", utm(source="partnerco", medium="video"), "Organic Video"),
        ("", utm(source="partnerco", medium="affiliate"), "Affiliate"),
        ("", utm(source="partnerco", medium="referral"), "Referral"),
        ("", utm(source="partnerco", medium="podcast"), "Audio"),
        ("", utm(source="partnerco", medium="push"), "Push"),
        ("", utm(source="partnerco", medium="influencer"), "Influencer"),
        ("", utm(source="partnerco", medium="blog"), "Content"),
        ("", utm(source="partnerco", medium="webinar"), "Event"),
        ("", utm(source="partnerco", medium="email"), "Email"),
        ("", utm(source="partnerco", medium="chatbot"), "AI"),
        # rule 8: campaign names
        ("", utm(source="partnerco", campaign="spring-video"), "Organic Video"),
        ("", utm(source="partnerco", campaign="shop-week"), "Organic Shopping"),
        ("", utm(source="partnerco", campaign="creator-fund"), "Influencer"),
        ("", utm(source="partnerco", campaign="conference-2026"), "Event"),
        ("", utm(source="partnerco", campaign="linkedin-push"), "Organic Social"),
        ("", utm(source="partnerco", campaign="gen ai launch"), "AI"),
        # rule 9: anything else from elsewhere
        ("https://blog.partner.org/post", {}, "Referral"),
        ("", utm(source="partnerco"), "Referral"),
    ],
)
def test_channels002_rules(referrer: str, tags: dict[str, str], expected: str):
    assert classify_channel(referrer, tags, "example.com") == expected


@pytest.mark.parametrize(
    ("referrer", "expected"),
    [
        ("https://www.microsoft.com/", "Referral"),  # contains "t.co" but is not t.co
        ("https://about.com/", "Referral"),
        ("https://www.dropbox.com/", "Referral"),  # contains "x.com"
        ("https://also.com/", "Referral"),  # contains "so.com"
        ("https://x.com/someone", "Organic Social"),
        ("https://mobile.x.com/someone", "Organic Social"),
        ("https://www.google.de/", "Organic Search"),
        ("https://google.co.jp/", "Organic Search"),
        ("https://images.google.com.br/", "Organic Search"),
        ("https://notgoogle.com/", "Referral"),
        ("https://googleblog.example/", "Referral"),
        ("https://search.brave.com/", "Organic Search"),
        ("https://research.org/", "Referral"),  # "search." prefix must be a whole label
        ("https://m.facebook.com/", "Organic Social"),
        ("https://mastodon.online/@a", "Organic Social"),
    ],
)
def test_channels003_domains_match_on_label_boundaries(referrer: str, expected: str):
    assert classify_channel(referrer, {}, "example.com") == expected


def test_channels004_paid_words_are_whole_words():
    # The peer's substring rule calls "broadcast" paid because it contains "ad".
    assert classify_channel("", utm(source="partnerco", medium="broadcast"), "example.com") == "Organic Video"
    assert classify_channel("", utm(source="partnerco", medium="paid_social"), "example.com") == "Paid Unknown"
    assert classify_channel("", utm(source="partnerco", medium="upload"), "example.com") == "Referral"
    assert classify_channel("", utm(source="partnerco", medium="ads"), "example.com") == "Paid Unknown"


def test_channels005_self_referral_and_unknown():
    # A subdomain of the site that was not cleared by the exact-host rule is a self-referral: Unknown.
    assert classify_channel("https://blog.example.com/post", {}, "example.com") == "Unknown"
    assert classify_channel("https://blog.example.com/post", {}, "www.example.com") == "Unknown"
    assert classify_channel("not a url", {}, "example.com") == ""


def test_channels006_source_type_and_app_ids_on_dotted_boundaries():
    assert source_type("google") == "search"
    assert source_type("mail.google.com") == "search"
    assert source_type("microsoft.com") == "direct"
    assert classify_channel("", utm(source="com.facebookfake.app"), "example.com") == "Referral"
    assert classify_channel("", utm(source="com.facebook.katana.beta"), "example.com") == "Organic Social"
