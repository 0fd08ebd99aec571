"""Knowledge sources: where an organisation keeps its documents (a folder, a website,
Confluence, SharePoint/OneDrive, Google Drive), kept in sync with the knowledge base."""
