"""Every Dash component id of the dashboard, declared once.

Ids read ``"<page>-<thing>"``. The frame's ids come first; each page appends its own section below.
Pattern-matching ids are dicts whose ``"type"`` is one of the ``*_TYPE`` constants here.
"""

# --- frame (app shell, shared controls) -------------------------------------------------------------
AUTH = "frame-auth"  # dcc.Store(session): {"token", "email"} of the signed-in person
SHARE = "frame-share"  # dcc.Store(session): {"privateKey", "siteId"} of a private-link viewer
BROWSER_ZONE = "frame-browser-zone"  # dcc.Store(local): the browser's IANA time zone, set by a clientside callback
NAVIGATE = "frame-navigate"  # dcc.Location(refresh="callback-nav"): callbacks set "href"/"search" here to move
NAVBAR = "frame-navbar"
NAV_LINKS = "frame-nav-links"
NAV_MENU = "frame-nav-menu"  # the links and account side, folded behind NAV_TOGGLE on a narrow screen
NAV_TOGGLE = "frame-nav-toggle"
THEME_TOGGLE = "frame-theme-toggle"
SIGN_OUT = "frame-sign-out"
USER_EMAIL = "frame-user-email"
SITE_PICKER = "frame-site-picker"
SITE_CHOICE = "frame-site-choice"  # dcc.Store: a site picked by the person (not the picker following the URL)
MAIN = "frame-main"

# Per analytics page: the resolved view of the URL (ViewState.to_dict()); page callbacks take it as Input.
VIEW = "frame-view"
CONTROLS = "frame-controls"
CONTROLS_TOGGLE = "frame-controls-toggle"
DATE_PRESET = "frame-date-preset"
DATE_RANGE = "frame-date-range"
DATE_BACK = "frame-date-back"
DATE_FORWARD = "frame-date-forward"
TIME_ZONE = "frame-time-zone"
ZONE_NAMES = "frame-zone-names"  # dcc.Store in the shell: every zone the time zone selector finds by typing
FILTER_PARAMETER = "frame-filter-parameter"
FILTER_TYPE = "frame-filter-type"
FILTER_VALUE = "frame-filter-value"
FILTER_ADD = "frame-filter-add"
FILTER_SUGGESTIONS = "frame-filter-suggestions"  # html.Datalist: top values of the chosen parameter
FILTER_MESSAGE = "frame-filter-message"  # why a typed value was not added
FILTER_CHIPS = "frame-filter-chips"
FILTER_CHIP_REMOVE_TYPE = "frame-filter-chip-remove"  # {"type": ..., "index": position in ViewState.filters}
OVERVIEW = "frame-overview"
OVERVIEW_BODY = "frame-overview-body"
# Present only when the layout could not draw the overview strip from cached answers: its callback loads it.
OVERVIEW_LOAD = "frame-overview-load"
# {"type": ..., "index": 0}: dcc.Store on a page that loads its body before the strip; the body's callback fills it.
OVERVIEW_AFTER_TYPE = "frame-overview-after"
# dcc.Store inside the frame: page and frame controls write the next URL here; a clientside callback moves there.
# (Writing into the page itself, not the shell's Location, lets prevent_initial_call hold when the page is drawn.)
FRAME_HREF = "frame-href"

# --- login --------------------------------------------------------------------------------------------
LOGIN_EMAIL = "login-email"
LOGIN_PASSWORD = "login-password"
LOGIN_SUBMIT = "login-submit"
LOGIN_MODE = "login-mode"  # "password" or "key"
LOGIN_API_KEY = "login-api-key"
LOGIN_MESSAGE = "login-message"
LOGIN_NEXT = "login-next"

# --- sites (site picker page) ---------------------------------------------------------------------------
SITES_LIST = "sites-list"

# --- goals ----------------------------------------------------------------------------------------------
GOALS_TABLE = "goals-table"
GOALS_BODY = "goals-body"
GOALS_SORT = "goals-sort"
GOALS_SEARCH = "goals-search"
GOALS_ORDER = "goals-order"
GOALS_CSV = "goals-csv"
GOALS_CSV_DOWNLOAD = "goals-csv-download"
GOALS_CSV_STATUS = "goals-csv-status"  # why the last download failed, beside the button
GOALS_NEW = "goals-new"
GOALS_FORM = "goals-form"
GOALS_FORM_TITLE = "goals-form-title"
GOALS_FORM_GOAL_ID = "goals-form-goal-id"
GOALS_FORM_NAME = "goals-form-name"
GOALS_FORM_TYPE = "goals-form-type"
GOALS_FORM_PATH = "goals-form-path"
GOALS_FORM_EVENT = "goals-form-event"
GOALS_FORM_PROPERTY_KEY = "goals-form-property-key"
GOALS_FORM_PROPERTY_VALUE = "goals-form-property-value"
GOALS_FORM_VALUE_PATTERN = "goals-form-value-pattern"
GOALS_FORM_VALUE_FIELDS = "goals-form-value-fields"
GOALS_FORM_CANCEL_2 = "goals-form-cancel-2"
GOALS_DATA = "goals-data"  # dcc.Store: the goals of the page shown (for edit and clone)
GOALS_SESSIONS_TOTAL = "goals-sessions-total"  # the goals table's caption: the sessions every rate is out of
GOALS_FORM_PATH_FIELDS = "goals-form-path-fields"
GOALS_FORM_PATH_PREVIEW = "goals-form-path-preview"  # which recent paths the typed pattern matches
GOALS_PATH_SUGGESTIONS = "goals-path-suggestions"  # html.Datalist: the site's paths
GOALS_EVENT_SUGGESTIONS = "goals-event-suggestions"  # html.Datalist: the site's custom event names
GOALS_FORM_EVENT_FIELDS = "goals-form-event-fields"
GOALS_FORM_SAVE = "goals-form-save"
GOALS_FORM_CANCEL = "goals-form-cancel"
GOALS_FORM_MESSAGE = "goals-form-message"
GOALS_FORM_ERROR_TYPE = "goals-form-error"  # {"type": ..., "field": "name" | "pathPattern" | ...}
GOALS_ACTION_TYPE = "goals-action"  # {"type": ..., "action": "edit" | "clone" | "delete", "goal": goal_id}
GOALS_ACTION = "goals-action-clicked"  # dcc.Store: the id (action, goal) of the row button just clicked
GOALS_DELETE_CONFIRM = "goals-delete-confirm"
GOALS_DELETE_TARGET = "goals-delete-target"
GOALS_DELETE_TEXT = "goals-delete-text"
GOALS_DELETE_YES = "goals-delete-yes"
GOALS_DELETE_NO = "goals-delete-no"
GOALS_REFRESH = "goals-refresh"  # dcc.Store bumped after a write so the table reloads
GOALS_STATUS = "goals-status"
GOALS_LOAD = "goals-load"  # dcc.Store, present only when the layout had no cached goals: its callback loads them

# --- goal sessions --------------------------------------------------------------------------------------
GOAL_SESSIONS_TABLE = "goal-sessions-table"
GOAL_SESSIONS_BODY = "goal-sessions-body"
GOAL_SESSIONS_TITLE = "goal-sessions-title"
GOAL_SESSIONS_CSV = "goal-sessions-csv"
GOAL_SESSIONS_CSV_DOWNLOAD = "goal-sessions-csv-download"
GOAL_SESSIONS_CSV_STATUS = "goal-sessions-csv-status"  # why the last download failed, beside the button

# --- channel ranking ------------------------------------------------------------------------------------
CHANNELS_GOAL = "channels-goal"
CHANNELS_BODY = "channels-body"
CHANNELS_SHOWN = "channels-shown"  # dcc.Store: the goal whose ranking is shown
CHANNELS_TABLE = "channels-table"
CHANNELS_CHART = "channels-chart"
CHANNELS_CSV = "channels-csv"
CHANNELS_CSV_DOWNLOAD = "channels-csv-download"
CHANNELS_CSV_STATUS = "channels-csv-status"  # why the last download failed, beside the button

# --- private-link view ----------------------------------------------------------------------------------
SHARE_BODY = "share-body"
SHARE_CONTENT = "share-content"
SHARE_TITLE = "share-title"
SHARE_INVALID = "share-invalid-holder"  # "this link is no longer valid" shows here, with nothing of the site
SHARE_TAB = "share-tab"  # dcc.Store: which part of the shared view is shown
SHARE_CHANNELS_GOAL = "share-channels-goal"
SHARE_OVERVIEW_BODY = "share-overview-body"  # the shared view's overview strip, loaded with its content
SHARE_ERRORS_DATA = "share-errors-data"  # dcc.Store: the error messages listed, by row index
SHARE_ERROR_ROW_TYPE = "share-error-row"  # {"type": ..., "index": row}

# --- errors ---------------------------------------------------------------------------------------------
ERRORS_BODY = "errors-body"
ERRORS_GROUPS = "errors-groups"
ERRORS_GROUP_TYPE = "errors-group"  # {"type": ..., "index": row position on the page}: a clickable error group
ERRORS_CHOSEN = "errors-chosen"  # dcc.Store: the view with the group a click chose (opens it without a page render)
ERRORS_GROUP_MESSAGES = "errors-group-messages"  # dcc.Store: the messages of the groups shown, by row position
ERRORS_GROUPS_LOAD = "errors-groups-load"  # dcc.Store, present only when the layout had no cached groups
ERRORS_TRENDS_LOAD = "errors-trends-load"  # dcc.Store beside a list drawn without sparklines: loads them next
ERRORS_TREND_TYPE = "errors-trend"  # {"type": ..., "index": row position}: the sparkline cell of a group
ERRORS_GROUPS_PREV = "errors-groups-prev"
ERRORS_GROUPS_NEXT = "errors-groups-next"
ERRORS_GROUPS_CSV = "errors-groups-csv"
ERRORS_GROUPS_CSV_DOWNLOAD = "errors-groups-csv-download"
ERRORS_GROUPS_CSV_STATUS = "errors-groups-csv-status"  # why the last download failed, beside the button
ERRORS_DETAIL = "errors-detail"
ERRORS_DETAIL_LOAD = "errors-detail-load"  # dcc.Store, present only when a group is chosen: loads its detail
ERRORS_DETAIL_VIEW = "errors-detail-view"  # dcc.Store inside the detail: the view (with its error) it shows
ERRORS_BUCKET = "errors-bucket"
ERRORS_CHART = "errors-chart"
ERRORS_OCCURRENCES = "errors-occurrences"
ERRORS_OCCURRENCES_PAGE = "errors-occurrences-page"  # dcc.Store: page of the occurrences list
ERRORS_OCCURRENCES_PREV = "errors-occurrences-prev"
ERRORS_OCCURRENCES_NEXT = "errors-occurrences-next"
ERRORS_OCCURRENCES_CSV = "errors-occurrences-csv"
ERRORS_OCCURRENCES_CSV_DOWNLOAD = "errors-occurrences-csv-download"
ERRORS_OCCURRENCES_CSV_STATUS = "errors-occurrences-csv-status"  # why the last download failed, beside the button

# --- usage ----------------------------------------------------------------------------------------------
USAGE_BODY = "usage-body"
USAGE_ORG = "usage-org"
USAGE_CHART = "usage-chart"
USAGE_TOTALS = "usage-totals"
USAGE_TOTAL_PREFIX = "usage-total"  # "usage-total-<field>": the number of one category (or event_count)
USAGE_CSV = "usage-csv"
USAGE_CSV_DOWNLOAD = "usage-csv-download"
USAGE_CSV_STATUS = "usage-csv-status"  # why the last download failed, beside the button

# --- site settings --------------------------------------------------------------------------------------
SETTINGS_BODY = "settings-body"
SETTINGS_SAVED = "settings-saved"  # dcc.Store: {"siteId", "domain", "switches": {field: bool}} as last saved
SETTINGS_SWITCH_TYPE = "settings-switch"  # {"type": ..., "field": "blockBots"}: one configuration switch
SETTINGS_SWITCHES_SAVE = "settings-switches-save"
SETTINGS_SWITCHES_STATUS = "settings-switches-status"
SETTINGS_EXCLUDED_IPS = "settings-excluded-ips"
SETTINGS_EXCLUDED_IPS_PROBLEMS = "settings-excluded-ips-problems"
SETTINGS_EXCLUDED_IPS_SAVE = "settings-excluded-ips-save"
SETTINGS_EXCLUDED_IPS_STATUS = "settings-excluded-ips-status"
SETTINGS_EXCLUDED_COUNTRIES = "settings-excluded-countries"
SETTINGS_EXCLUDED_COUNTRIES_PROBLEMS = "settings-excluded-countries-problems"
SETTINGS_EXCLUDED_COUNTRIES_SAVE = "settings-excluded-countries-save"
SETTINGS_EXCLUDED_COUNTRIES_STATUS = "settings-excluded-countries-status"
SETTINGS_LINK = "settings-link"
SETTINGS_LINK_URL = "settings-link-url"
SETTINGS_LINK_COPY = "settings-link-copy"
SETTINGS_LINK_GENERATE = "settings-link-generate"
SETTINGS_LINK_REVOKE = "settings-link-revoke"
SETTINGS_LINK_REGENERATE_CONFIRM = SETTINGS_LINK_GENERATE + "-confirm"  # asks before replacing the link
SETTINGS_LINK_REVOKE_CONFIRM = SETTINGS_LINK_REVOKE + "-confirm"  # asks before revoking the link
SETTINGS_LINK_STATUS = "settings-link-status"
SETTINGS_DELETE_INPUT = "settings-delete-input"
SETTINGS_DELETE = "settings-delete"
SETTINGS_DELETE_STATUS = "settings-delete-status"

# --- overview -------------------------------------------------------------------------------------------
OVERVIEW_TILES = "overview-tiles"
OVERVIEW_SHOWN = "overview-shown"  # dcc.Store: the view whose headline numbers are on screen (the rest follows it)
OVERVIEW_CHART = "overview-chart"
OVERVIEW_METRIC = "overview-metric"  # which headline number the main chart draws
OVERVIEW_BUCKET = "overview-bucket"
OVERVIEW_LIVE = "overview-live"
OVERVIEW_LIVE_TICK = "overview-live-tick"  # dcc.Interval that refreshes the live badge
OVERVIEW_GOALS = "overview-goals"
OVERVIEW_MAP = "overview-map"  # the world map of the Locations panel
OVERVIEW_TABS_TYPE = "overview-tabs"  # {"type": ..., "panel": "Pages" | ...}: the tabs of one panel
OVERVIEW_PANEL_TYPE = "overview-panel"  # {"type": ..., "panel": ...}: the rows of one panel
OVERVIEW_ROW_TYPE = "overview-row"  # {"type": ..., "parameter": ..., "value": ...}: a row that adds a filter

# --- sessions -------------------------------------------------------------------------------------------
SESSIONS_BODY = "sessions-body"
SESSIONS_TABLE = "sessions-table"
SESSION_BODY = "session-body"  # one session's facts and timeline
SESSION_TIMELINE = "session-timeline"
USER_BODY = "user-body"
USER_FACTS = "user-facts"
USER_SESSIONS_TABLE = "user-sessions-table"

# --- funnels --------------------------------------------------------------------------------------------
FUNNEL_STEPS = "funnel-steps"  # the step rows
FUNNEL_STEP_TYPE = "funnel-step"  # {"type": ..., "field": "kind" | "value" | "key" | "prop", "index": n}
FUNNEL_ADD = "funnel-add"
FUNNEL_REMOVE = "funnel-remove"
FUNNEL_ANALYZE = "funnel-analyze"
FUNNEL_SEGMENT_PARAMETER = "funnel-segment-parameter"
FUNNEL_SEGMENT_VALUE = "funnel-segment-value"
FUNNEL_RESULT = "funnel-result"
FUNNEL_CHART = "funnel-chart"
FUNNEL_TABLE = "funnel-table"
SITES_STATS_TYPE = "sites-stats"  # {"type": ..., "site": site_id}: visitors of the last 24 hours and a sparkline
SITES_STATS_LOAD = "sites-stats-load"  # dcc.Store: the site ids whose stats load after the list is drawn
SITES_ADD_ORG = "sites-add-org"
SITES_ADD_DOMAIN = "sites-add-domain"
SITES_ADD_NAME = "sites-add-name"
SITES_ADD_SUBMIT = "sites-add-submit"
SITES_ADD_ERROR = "sites-add-error"  # the API's answer about the domain, beside the field
SITES_NEW = "sites-new"  # the new site's tracking snippet and first-page-view status
SITES_NEW_ID = "sites-new-id"  # dcc.Store: the site just added
SITES_NEW_TICK = "sites-new-tick"  # dcc.Interval: asks whether the first page view arrived
SITES_NEW_STATUS = "sites-new-status"
SITES_SNIPPET = "sites-snippet"
